// The ib net backend against the fake verbs provider (test/ib_fake), loaded by path through the
// same dlopen loader as libibverbs: first the fake's own rules through the verbs (QP states and
// their attribute masks, memory keys, bounds and access, write with immediate consuming a
// receive, completions in order), then the backend: random messages of many pieces, staged and
// registered, several in flight, every byte compared; tag and size mismatches; injected faults
// (retry exceeded, remote access, flush, port down) and a peer that goes away, each a clear
// error naming device, QP and status on both ends; XCCL_IB_HCA; no device; the real libibverbs.
#if XCCL_HAVE_IBVERBS && defined(XCCL_TEST_IB_FAKE_PATH)

#include "transport/net/ib_net.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/deadline.h"
#include "base/error.h"
#include "ib_fake/fake_verbs_handle.h"
#include "transport/net/ib_comm.h"
#include "transport/net/ib_devices.h"
#include "transport/net/ib_queue_pair.h"
#include "transport/net/ib_verbs_loader.h"

namespace xccl {
namespace {

constexpr int64_t kTimeoutMs = 10000;

xccl_test::FakeVerbs& Fake() {
  static xccl_test::FakeVerbs fake;
  static bool opened = [] {
    std::string why;
    const bool ok = fake.Open(XCCL_TEST_IB_FAKE_PATH, &why);
    EXPECT_TRUE(ok) << why;
    return ok;
  }();
  (void)opened;
  return fake;
}

class IbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(Fake().configure, nullptr);
    ASSERT_EQ(Fake().live_objects(), 0) << "an earlier test left verbs objects alive";
    ASSERT_EQ(Fake().configure("fakeib0:1,fakeib1:2"), 0);
    Fake().inject("");
  }
  void TearDown() override {
    Fake().inject("");
    EXPECT_EQ(Fake().live_objects(), 0) << "verbs objects leaked";
  }
};

std::vector<uint8_t> RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

xcclResult_t PollUntil(const std::function<xcclResult_t(bool*)>& step) {
  const Deadline deadline(kTimeoutMs);
  for (;;) {
    bool done = false;
    const xcclResult_t r = step(&done);
    if (r != xcclSuccess || done) return r;
    if (deadline.Expired()) return xcclTimeout;
    std::this_thread::yield();
  }
}

// ---- the fake's rules, through the verbs ----

struct Verbs {
  std::shared_ptr<const IbVerbs> verbs;
  std::vector<std::shared_ptr<IbPort>> ports;
};

void OpenFake(const std::string& hca, Verbs* v) {
  std::string why;
  ASSERT_TRUE(LoadIbVerbs(XCCL_TEST_IB_FAKE_PATH, &v->verbs, &why)) << why;
  ASSERT_TRUE(OpenIbPorts(v->verbs, hca, /*gid_index=*/0, &v->ports, &why)) << why;
}

ibv_qp_attr Attr(ibv_qp_state state) {
  ibv_qp_attr attr;
  memset(&attr, 0, sizeof(attr));
  attr.qp_state = state;
  return attr;
}

TEST_F(IbTest, FakeQueuePairStatesCheckTheirAttributeMasks) {
  Verbs v;
  OpenFake("fakeib0", &v);
  ASSERT_EQ(v.ports.size(), 1u);
  std::unique_ptr<IbQueuePair> qp;
  ASSERT_EQ(IbQueuePair::Create(v.ports[0], 4, 4, 0, &qp), xcclSuccess);
  const IbVerbs& verbs = *v.verbs;
  ibv_qp_attr attr = Attr(IBV_QPS_RTR);
  EXPECT_NE(verbs.modify_qp(qp->qp(), &attr, IBV_QP_STATE), 0) << "RESET -> RTR";
  EXPECT_NE(std::string(Fake().last_error()).find("no transition RESET->RTR"), std::string::npos);
  attr = Attr(IBV_QPS_INIT);
  attr.port_num = 1;
  EXPECT_NE(verbs.modify_qp(qp->qp(), &attr, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0)
      << "INIT without the pkey index";
  EXPECT_NE(std::string(Fake().last_error()).find("required"), std::string::npos);
  EXPECT_NE(verbs.modify_qp(qp->qp(), &attr,
                            IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS |
                                IBV_QP_DEST_QPN),
            0)
      << "INIT with a destination";
  EXPECT_NE(std::string(Fake().last_error()).find("does not take"), std::string::npos);
  attr.port_num = 3;
  EXPECT_NE(verbs.modify_qp(qp->qp(), &attr,
                            IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
            0)
      << "a port the device lacks";
  ASSERT_EQ(qp->ToInit(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE), xcclSuccess);
  // Posting a send before RTS is refused; receives may be posted from INIT.
  ibv_send_wr wr;
  memset(&wr, 0, sizeof(wr));
  wr.opcode = IBV_WR_RDMA_WRITE;
  ibv_send_wr* bad = nullptr;
  EXPECT_NE(ibv_post_send(qp->qp(), &wr, &bad), 0);
  EXPECT_EQ(bad, &wr);
  ASSERT_EQ(IbRecvComm::PostReceives(qp.get(), 2), xcclSuccess);
  attr = Attr(IBV_QPS_RTR);
  attr.path_mtu = IBV_MTU_4096;
  attr.ah_attr.dlid = 0x11;
  EXPECT_NE(verbs.modify_qp(qp->qp(), &attr,
                            IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC),
            0)
      << "RTR without the RNR timer";
  // Connected to itself (a loopback QP): RTR and RTS with the right masks.
  IbEndpointInfo self = qp->LocalInfo();
  ASSERT_EQ(qp->Connect(self), xcclSuccess) << ThreadLastError();
  // To ERR: the two posted receives flush, in order.
  qp->ToError();
  ibv_wc wc[4];
  ASSERT_EQ(ibv_poll_cq(qp->cq(), 4, wc), 2);
  EXPECT_EQ(wc[0].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(wc[1].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_STREQ(verbs.StatusName(wc[0].status), "Work Request Flushed Error");
}

// Two QPs on the fabric, connected, with an MR each.
struct Wire {
  Verbs v;
  std::unique_ptr<IbQueuePair> a, b;
  std::vector<char> a_buf, b_buf;
  ibv_mr* a_mr = nullptr;
  ibv_mr* b_mr = nullptr;
  ~Wire() {
    a.reset();
    b.reset();
    if (a_mr) v.verbs->dereg_mr(a_mr);
    if (b_mr) v.verbs->dereg_mr(b_mr);
  }
};

void Connect(Wire* w, int b_mr_access) {
  OpenFake("", &w->v);
  ASSERT_EQ(w->v.ports.size(), 3u);  // fakeib0:1, fakeib1:1, fakeib1:2
  ASSERT_EQ(IbQueuePair::Create(w->v.ports[0], 8, 8, 64, &w->a), xcclSuccess);
  ASSERT_EQ(IbQueuePair::Create(w->v.ports[2], 8, 8, 64, &w->b), xcclSuccess);
  ASSERT_EQ(w->a->ToInit(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE), xcclSuccess);
  ASSERT_EQ(w->b->ToInit(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE), xcclSuccess);
  ASSERT_EQ(w->a->Connect(w->b->LocalInfo()), xcclSuccess);
  ASSERT_EQ(w->b->Connect(w->a->LocalInfo()), xcclSuccess);
  w->a_buf.assign(4096, 1);
  w->b_buf.assign(4096, 0);
  w->a_mr = w->v.verbs->reg_mr(w->v.ports[0]->pd(), w->a_buf.data(), 4096, IBV_ACCESS_LOCAL_WRITE);
  w->b_mr = w->v.verbs->reg_mr(w->v.ports[2]->pd(), w->b_buf.data(), 4096, b_mr_access);
  ASSERT_NE(w->a_mr, nullptr);
  ASSERT_NE(w->b_mr, nullptr);
}

ibv_wc_status WriteImm(Wire& w, uint64_t wr_id, size_t offset, size_t bytes, uint32_t rkey,
                       uint32_t imm) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(w.a_buf.data()), static_cast<uint32_t>(bytes),
              w.a_mr->lkey};
  ibv_send_wr wr;
  memset(&wr, 0, sizeof(wr));
  wr.wr_id = wr_id;
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.imm_data = htonl(imm);
  wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(w.b_buf.data()) + offset;
  wr.wr.rdma.rkey = rkey;
  ibv_send_wr* bad = nullptr;
  if (ibv_post_send(w.a->qp(), &wr, &bad) != 0) return IBV_WC_GENERAL_ERR;
  ibv_wc wc;
  if (ibv_poll_cq(w.a->cq(), 1, &wc) != 1 || wc.wr_id != wr_id) return IBV_WC_GENERAL_ERR;
  return wc.status;
}

TEST_F(IbTest, FakeWriteWithImmediateConsumesAReceiveInOrder) {
  Wire w;
  Connect(&w, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  const std::vector<uint8_t> data = RandomBytes(4096, 7);
  memcpy(w.a_buf.data(), data.data(), data.size());
  // No receive posted: RNR (the fake does not wait).
  EXPECT_EQ(WriteImm(w, 1, 0, 100, w.b_mr->rkey, 5), IBV_WC_RNR_RETRY_EXC_ERR);
  Wire w2;
  Connect(&w2, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  memcpy(w2.a_buf.data(), data.data(), data.size());
  ASSERT_EQ(IbRecvComm::PostReceives(w2.b.get(), 3), xcclSuccess);
  for (uint32_t i = 0; i < 3; ++i)
    ASSERT_EQ(WriteImm(w2, 10 + i, i * 1000, 1000, w2.b_mr->rkey, 100 + i), IBV_WC_SUCCESS);
  ibv_wc wc[4];
  ASSERT_EQ(ibv_poll_cq(w2.b->cq(), 4, wc), 3);
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(wc[i].status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc[i].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
    EXPECT_EQ(ntohl(wc[i].imm_data), 100 + i) << "completions in order";
    EXPECT_EQ(wc[i].byte_len, 1000u);
    EXPECT_EQ(memcmp(w2.b_buf.data() + i * 1000, data.data(), 1000), 0);
  }
}

TEST_F(IbTest, FakeMemoryRegionsCheckKeysBoundsAndAccess) {
  Verbs v;
  OpenFake("fakeib0", &v);
  std::vector<char> buf(64);
  EXPECT_EQ(v.verbs->reg_mr(v.ports[0]->pd(), buf.data(), buf.size(), IBV_ACCESS_REMOTE_WRITE),
            nullptr)
      << "remote write without local write";
  v.ports.clear();
  struct Case {
    const char* what;
    int access;
    size_t offset, bytes;
    bool bad_key;
  };
  const Case cases[] = {
      {"past the end", IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 4000, 200, false},
      {"a wrong rkey", IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 0, 10, true},
      {"no remote write", IBV_ACCESS_LOCAL_WRITE, 0, 10, false}};
  for (const Case& c : cases) {
    Wire w;
    Connect(&w, c.access);
    ASSERT_EQ(IbRecvComm::PostReceives(w.b.get(), 1), xcclSuccess);
    EXPECT_EQ(WriteImm(w, 1, c.offset, c.bytes, w.b_mr->rkey + (c.bad_key ? 2 : 0), 0),
              IBV_WC_REM_ACCESS_ERR)
        << c.what;
    // The responder went to ERR: its receive flushed, nothing written.
    ibv_wc wc;
    ASSERT_EQ(ibv_poll_cq(w.b->cq(), 1, &wc), 1) << c.what;
    EXPECT_EQ(wc.status, IBV_WC_WR_FLUSH_ERR) << c.what;
    EXPECT_EQ(std::count(w.b_buf.begin(), w.b_buf.end(), 0), 4096) << c.what;
  }
}

// ---- the backend ----

struct Pair {
  std::unique_ptr<NetBackend> net;
  std::unique_ptr<NetListenComm> listener;
  std::unique_ptr<NetSendComm> send;
  std::unique_ptr<NetRecvComm> recv;
};

void ConnectPair(const std::string& hca, Pair* pair) {
  IbNetOptions options;
  options.library = XCCL_TEST_IB_FAKE_PATH;
  options.hca = hca;
  options.socket_ifname = "lo";
  std::string why;
  ASSERT_TRUE(OpenIbNet(options, &pair->net, &why)) << why;
  NetHandle handle;
  ASSERT_EQ(pair->net->Listen(0, &handle, &pair->listener), xcclSuccess);
  ASSERT_EQ(pair->net->Connect(0, handle, &pair->send), xcclSuccess) << ThreadLastError();
  ASSERT_EQ(PollUntil([&](bool* done) {
              bool ready = false;
              XCCL_TRY(pair->send->Ready(&ready));
              if (!pair->recv) XCCL_TRY(pair->net->Accept(pair->listener.get(), &pair->recv));
              *done = ready && pair->recv;
              return xcclSuccess;
            }),
            xcclSuccess)
      << ThreadLastError();
}

// Sends `sizes` (random bytes, tags i) with up to `depth` in flight and checks every byte.
void Exchange(Pair& pair, const std::vector<size_t>& sizes, int depth, bool registered,
              uint64_t seed) {
  std::vector<std::vector<uint8_t>> out, in;
  std::vector<NetRegistration*> out_reg(sizes.size(), nullptr), in_reg(sizes.size(), nullptr);
  for (size_t i = 0; i < sizes.size(); ++i) {
    out.push_back(RandomBytes(sizes[i], seed + i));
    in.push_back(std::vector<uint8_t>(sizes[i] + 17, 0xA5));  // poisoned, and some room left
    if (registered && sizes[i] > 0) {
      ASSERT_EQ(pair.send->Register(out[i].data(), out[i].size(), NetMemory::kHost, &out_reg[i]),
                xcclSuccess);
      ASSERT_EQ(pair.recv->Register(in[i].data(), in[i].size(), NetMemory::kHost, &in_reg[i]),
                xcclSuccess);
    }
  }
  size_t posted_send = 0, posted_recv = 0, done_send = 0, done_recv = 0;
  std::vector<NetRequest*> sends(sizes.size(), nullptr), recvs(sizes.size(), nullptr);
  const uint64_t arrived_before = pair.recv->bytes_arrived();
  ASSERT_EQ(
      PollUntil([&](bool* finished) {
        while (posted_send < sizes.size() && posted_send - done_send < size_t(depth)) {
          const size_t i = posted_send;
          XCCL_TRY(pair.send->Isend(out[i].data(), sizes[i], uint32_t(i), out_reg[i], &sends[i]));
          if (sends[i] == nullptr) break;
          ++posted_send;
        }
        while (posted_recv < sizes.size() && posted_recv - done_recv < size_t(depth)) {
          const size_t i = posted_recv;
          XCCL_TRY(pair.recv->Irecv(in[i].data(), in[i].size(), uint32_t(i), in_reg[i], &recvs[i]));
          if (recvs[i] == nullptr) break;
          ++posted_recv;
        }
        bool d = false;
        size_t bytes = 0;
        if (done_send < posted_send) {
          XCCL_TRY(pair.send->Test(sends[done_send], &d, &bytes));
          if (d) ++done_send;
        }
        if (done_recv < posted_recv) {
          XCCL_TRY(pair.recv->Test(recvs[done_recv], &d, &bytes));
          if (d) {
            if (bytes != sizes[done_recv])
              return Fail(xcclInternalError, "message %zu: %zu bytes, expected %zu", done_recv,
                          bytes, sizes[done_recv]);
            ++done_recv;
          }
        }
        *finished = done_send == sizes.size() && done_recv == sizes.size();
        return xcclSuccess;
      }),
      xcclSuccess)
      << ThreadLastError();
  size_t total = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    total += sizes[i];
    EXPECT_EQ(memcmp(in[i].data(), out[i].data(), sizes[i]), 0) << "message " << i;
    for (size_t j = sizes[i]; j < in[i].size(); ++j)
      ASSERT_EQ(in[i][j], 0xA5) << "message " << i << " wrote past its size";
    pair.send->Deregister(out_reg[i]);
    pair.recv->Deregister(in_reg[i]);
  }
  EXPECT_EQ(pair.recv->bytes_arrived() - arrived_before, total);
}

TEST_F(IbTest, RandomMessagesStagedAndRegisteredArriveWhole) {
  std::mt19937_64 rng(::testing::UnitTest::GetInstance()->random_seed() + 11);
  for (bool registered : {false, true}) {
    Pair pair;
    ConnectPair("", &pair);
    std::vector<size_t> sizes = {0, 1, 32, kIbPieceBytes, kIbPieceBytes + 1, 3 * kIbPieceBytes + 5};
    for (int i = 0; i < 20; ++i) sizes.push_back(rng() % (3u << 20));
    const long writes_before = Fake().writes();
    for (int depth : {1, 3, kIbMaxRequests}) Exchange(pair, sizes, depth, registered, rng());
    EXPECT_GT(Fake().writes(), writes_before) << "the bytes went over the fake's RDMA writes";
  }
}

TEST_F(IbTest, TagOrSizeMismatchFailsBothEnds) {
  for (bool size_mismatch : {false, true}) {
    Pair pair;
    ConnectPair("", &pair);
    std::vector<uint8_t> out(1000, 1), in(size_mismatch ? 500 : 1000);
    NetRequest* s = nullptr;
    NetRequest* r = nullptr;
    ASSERT_EQ(pair.send->Isend(out.data(), out.size(), 7, nullptr, &s), xcclSuccess);
    ASSERT_EQ(pair.recv->Irecv(in.data(), in.size(), size_mismatch ? 7 : 8, nullptr, &r),
              xcclSuccess);
    bool d = false;
    size_t bytes = 0;
    xcclResult_t sent = xcclSuccess, received = xcclSuccess;
    std::string send_error, recv_error;
    PollUntil([&](bool* done) {
      if (sent == xcclSuccess && (sent = pair.send->Test(s, &d, &bytes)) != xcclSuccess)
        send_error = ThreadLastError();
      if (received == xcclSuccess && (received = pair.recv->Test(r, &d, &bytes)) != xcclSuccess)
        recv_error = ThreadLastError();
      *done = sent != xcclSuccess && received != xcclSuccess;
      return xcclSuccess;
    });
    EXPECT_NE(sent, xcclSuccess);
    EXPECT_NE(received, xcclSuccess);
    EXPECT_NE(send_error.find(size_mismatch ? "does not fit" : "another tag"), std::string::npos)
        << send_error;
    EXPECT_NE(recv_error.find("refused"), std::string::npos) << recv_error;
  }
}

// One fault armed, a message sent: both ends fail, each naming the device and QP, and the
// sender's error names the status.
TEST_F(IbTest, InjectedFaultsFailBothEndsClearly) {
  struct Case {
    const char* spec;
    const char* send_says;
  };
  const Case cases[] = {{"imm:1:retry", "transport retry counter exceeded"},
                        {"imm:1:rem_access", "remote access error"},
                        {"imm:1:flush", "Work Request Flushed Error"},
                        {"imm:1:port_down", "transport retry counter exceeded"}};
  for (const Case& c : cases) {
    Pair pair;
    ConnectPair("fakeib1:2", &pair);
    ASSERT_EQ(Fake().inject(c.spec), 0);
    std::vector<uint8_t> out = RandomBytes(5000, 3), in(5000);
    NetRequest* s = nullptr;
    NetRequest* r = nullptr;
    ASSERT_EQ(pair.send->Isend(out.data(), out.size(), 1, nullptr, &s), xcclSuccess);
    ASSERT_EQ(pair.recv->Irecv(in.data(), in.size(), 1, nullptr, &r), xcclSuccess);
    xcclResult_t sent = xcclSuccess, received = xcclSuccess;
    std::string send_error, recv_error;
    bool d = false;
    size_t bytes = 0;
    const xcclResult_t polled = PollUntil([&](bool* done) {
      if (sent == xcclSuccess && (sent = pair.send->Test(s, &d, &bytes)) != xcclSuccess)
        send_error = ThreadLastError();
      if (received == xcclSuccess && (received = pair.recv->Test(r, &d, &bytes)) != xcclSuccess)
        recv_error = ThreadLastError();
      *done = sent != xcclSuccess && received != xcclSuccess;
      return xcclSuccess;
    });
    EXPECT_EQ(polled, xcclSuccess) << c.spec << ": both ends must fail within the deadline";
    EXPECT_NE(send_error.find(c.send_says), std::string::npos) << c.spec << ": " << send_error;
    EXPECT_NE(send_error.find("fakeib1 port 2 QP 0x"), std::string::npos) << send_error;
    EXPECT_NE(recv_error.find("fakeib1 port 2 QP 0x"), std::string::npos) << recv_error;
    Fake().set_port_state("fakeib1", 2, 1);
  }
}

TEST_F(IbTest, APortGoingDownFailsAWaitingReceive) {
  Pair pair;
  ConnectPair("fakeib0", &pair);
  std::vector<uint8_t> in(100);
  NetRequest* r = nullptr;
  ASSERT_EQ(pair.recv->Irecv(in.data(), in.size(), 1, nullptr, &r), xcclSuccess);
  ASSERT_EQ(Fake().set_port_state("fakeib0", 1, 0), 0);
  bool d = false;
  size_t bytes = 0;
  EXPECT_NE(PollUntil([&](bool* done) { return pair.recv->Test(r, done, &bytes); }), xcclSuccess);
  EXPECT_NE(ThreadLastError().find("fakeib0 port 1 QP 0x"), std::string::npos);
  EXPECT_NE(ThreadLastError().find("the port is DOWN"), std::string::npos) << ThreadLastError();
  (void)d;
  Fake().set_port_state("fakeib0", 1, 1);
}

TEST_F(IbTest, APeerGoneMidMessageFailsTheOtherEnd) {
  Pair pair;
  ConnectPair("", &pair);
  std::vector<uint8_t> in(3 * kIbPieceBytes);
  std::vector<uint8_t> out = RandomBytes(in.size(), 5);
  NetRequest* s = nullptr;
  NetRequest* r = nullptr;
  ASSERT_EQ(pair.recv->Irecv(in.data(), in.size(), 1, nullptr, &r), xcclSuccess);
  ASSERT_EQ(pair.send->Isend(out.data(), out.size(), 1, nullptr, &s), xcclSuccess);
  bool d = false;
  size_t bytes = 0;
  ASSERT_EQ(pair.send->Test(s, &d, &bytes), xcclSuccess);  // one piece out
  pair.send.reset();
  EXPECT_NE(PollUntil([&](bool* done) { return pair.recv->Test(r, done, &bytes); }), xcclSuccess);
  EXPECT_NE(ThreadLastError().find("closed its connection"), std::string::npos)
      << ThreadLastError();
}

TEST_F(IbTest, DeviceMemoryIsRefusedWithAMessage) {
  Pair pair;
  ConnectPair("", &pair);
  std::vector<char> buf(64);
  NetRegistration* reg = nullptr;
  EXPECT_EQ(pair.send->Register(buf.data(), buf.size(), NetMemory::kDevice, &reg),
            xcclInvalidUsage);
  EXPECT_NE(ThreadLastError().find("dma-buf"), std::string::npos) << ThreadLastError();
  NetProperties props;
  ASSERT_EQ(pair.net->GetProperties(0, &props), xcclSuccess);
  EXPECT_EQ(props.name, "fakeib0:1");
  EXPECT_EQ(props.max_requests, kIbMaxRequests);
  EXPECT_FALSE(props.device_memory);
}

TEST_F(IbTest, HcaSpecChoosesPorts) {
  HcaSpec spec;
  std::string why;
  ASSERT_TRUE(ParseHcaSpec("^=fakeib0,fakeib1:2", &spec, &why));
  EXPECT_FALSE(spec.Matches("fakeib0", 1));
  EXPECT_TRUE(spec.Matches("fakeib1", 1));
  EXPECT_FALSE(spec.Matches("fakeib1", 2));
  EXPECT_TRUE(spec.Matches("fakeib00", 1)) << "exact names";
  EXPECT_FALSE(ParseHcaSpec("fakeib0:x", &spec, &why));
  EXPECT_NE(why.find("XCCL_IB_HCA"), std::string::npos);
  const struct {
    const char* hca;
    std::vector<std::string> ports;
  } cases[] = {{"", {"fakeib0 port 1", "fakeib1 port 1", "fakeib1 port 2"}},
               {"fakeib1:2", {"fakeib1 port 2"}},
               {"^fakeib1", {"fakeib0 port 1"}},
               {"=fakeib", {}},
               {"mlx5", {}}};
  for (const auto& c : cases) {
    std::shared_ptr<const IbVerbs> verbs;
    ASSERT_TRUE(LoadIbVerbs(XCCL_TEST_IB_FAKE_PATH, &verbs, &why)) << why;
    std::vector<std::shared_ptr<IbPort>> ports;
    const bool ok = OpenIbPorts(verbs, c.hca, /*gid_index=*/0, &ports, &why);
    std::vector<std::string> names;
    for (const auto& p : ports) names.push_back(p->Describe());
    EXPECT_EQ(names, c.ports) << c.hca;
    if (!ok) {
      EXPECT_NE(why.find("no active RDMA port matching XCCL_IB_HCA"), std::string::npos) << why;
    }
  }
  // A port that is DOWN is not taken, and the message says so.
  ASSERT_EQ(Fake().set_port_state("fakeib0", 1, 0), 0);
  std::shared_ptr<const IbVerbs> verbs;
  ASSERT_TRUE(LoadIbVerbs(XCCL_TEST_IB_FAKE_PATH, &verbs, &why));
  std::vector<std::shared_ptr<IbPort>> ports;
  EXPECT_FALSE(OpenIbPorts(verbs, "fakeib0", /*gid_index=*/0, &ports, &why));
  EXPECT_NE(why.find("fakeib0 port 1 (DOWN)"), std::string::npos) << why;
  Fake().set_port_state("fakeib0", 1, 1);
}

// XCCL_IB_GID_INDEX past a port's GID table (the fake's holds one entry) leaves the port out,
// saying why; index 0 takes it and the QP's address vector uses it (the fake refuses others).
TEST_F(IbTest, GidIndexMustExistOnThePort) {
  std::shared_ptr<const IbVerbs> verbs;
  std::string why;
  ASSERT_TRUE(LoadIbVerbs(XCCL_TEST_IB_FAKE_PATH, &verbs, &why)) << why;
  std::vector<std::shared_ptr<IbPort>> ports;
  EXPECT_FALSE(OpenIbPorts(verbs, "fakeib0", /*gid_index=*/1, &ports, &why));
  EXPECT_TRUE(ports.empty());
  EXPECT_NE(why.find("fakeib0 port 1 (1 GIDs, XCCL_IB_GID_INDEX=1)"), std::string::npos) << why;
  ASSERT_TRUE(OpenIbPorts(verbs, "fakeib0", /*gid_index=*/0, &ports, &why)) << why;
  ASSERT_EQ(ports.size(), 1u);
  EXPECT_EQ(ports[0]->gid_index(), 0);
}

TEST_F(IbTest, NoDeviceOrNoLibraryIsSaidPlainly) {
  IbNetOptions options;
  options.socket_ifname = "lo";
  std::unique_ptr<NetBackend> net;
  std::string why;
  options.library = "/nonexistent/libibverbs.so.1";
  EXPECT_FALSE(OpenIbNet(options, &net, &why));
  EXPECT_NE(why.find("cannot open /nonexistent/libibverbs.so.1"), std::string::npos) << why;
  ASSERT_EQ(Fake().configure(""), 0);
  options.library = XCCL_TEST_IB_FAKE_PATH;
  EXPECT_FALSE(OpenIbNet(options, &net, &why));
  EXPECT_NE(why.find("no RDMA device"), std::string::npos) << why;
  ASSERT_EQ(Fake().configure("fakeib0:1,fakeib1:2"), 0);
}

TEST_F(IbTest, RealLibibverbsWithoutADeviceSaysSo) {
  IbNetOptions options;
  options.socket_ifname = "lo";
  options.library = "libibverbs.so.1";
  std::unique_ptr<NetBackend> net;
  std::string why;
  if (OpenIbNet(options, &net, &why))
    GTEST_SKIP() << "this machine has an active RDMA port: not the no-device case";
  if (why.find("cannot open") != std::string::npos)
    GTEST_SKIP() << "libibverbs.so.1 is not installed: " << why;
  EXPECT_NE(why.find("no RDMA device"), std::string::npos) << why;
}

}  // namespace
}  // namespace xccl

#endif  // XCCL_HAVE_IBVERBS && XCCL_TEST_IB_FAKE_PATH
