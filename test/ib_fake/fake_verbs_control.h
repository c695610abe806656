/* The test-only controls of the fake verbs provider (fake_verbs.cc), for tests that dlopen it
 * by the same path as the library under test (so both see one fabric). Every call is
 * thread-safe. The environment can do the same before the first ibv_get_device_list:
 * FAKE_IBV_DEVICES (as fake_ibv_configure), FAKE_IBV_FAULT (as fake_ibv_inject). */
#ifndef XCCL_TEST_IB_FAKE_FAKE_VERBS_CONTROL_H_
#define XCCL_TEST_IB_FAKE_FAKE_VERBS_CONTROL_H_

#ifdef __cplusplus
extern "C" {
#endif

/* Replaces the fabric's devices: "name:ports[:eth],..." (default "fakeib0:1,fakeib1:2", ports
 * ACTIVE, InfiniBand link layer; ":eth" makes a device RoCE-like: no LIDs, GIDs only; "" means
 * no device). Refused (-1) while any object of the old fabric is alive. */
int fake_ibv_configure(const char* devices);
/* Moves a port to ACTIVE (1) or DOWN (0); -1 when there is no such port. */
int fake_ibv_set_port_state(const char* device, int port, int active);
/* Arms one fault (replacing any armed one; "" disarms): "<ops>:<n>:<kind>", where the n-th
 * (from 1) RDMA write from now -- <ops> "write": any, "imm": with immediate only -- fails with
 * <kind>: "retry" (IBV_WC_RETRY_EXC_ERR, the requester's QP to ERR), "rem_access"
 * (IBV_WC_REM_ACCESS_ERR, both QPs to ERR: the responder's receives flush), "flush" (the
 * requester's QP to ERR first: the write and its receives complete IBV_WC_WR_FLUSH_ERR) or
 * "port_down" (the requester's port goes DOWN, the write fails IBV_WC_RETRY_EXC_ERR). */
int fake_ibv_inject(const char* spec);
/* Why the fake last refused a verb (a modify_qp's attribute mask, a key, bounds), "" if never. */
const char* fake_ibv_last_error(void);
/* Contexts, PDs, MRs, CQs and QPs alive: 0 once everything was closed. */
int fake_ibv_live_objects(void);
/* RDMA writes executed (both kinds), since the process started. */
long fake_ibv_writes(void);

#ifdef __cplusplus
}
#endif

#endif
