// The frame ag_gemm_perf and gemm_rs_perf share: a GEMM fused with a collective, timed against
// its split forms per global M and (N, K). Both take the same own flags (--m --shapes --dtype
// --plugin --rounds) beside the harness's, print the same run header, stage the same operands,
// time a cell's variants interleaved over rounds, report each one's median, and check each
// variant's output once, on a poisoned buffer, against a double-precision reference. A binary
// describes its op (a FusedGemmOp), sets up a cell's variants, and hands main to
// FusedGemmBenchMain.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/float_formats.h"
#include "harness/device_buffers.h"
#include "harness/gemm_direct.h"
#include "harness/launcher.h"
#include "harness/vendor_nccl.h"
#include "xccl.h"
#include "xccl_gemm.h"

namespace xccl_perf {

struct GemmShape {
  int64_t n, k;
};

// The own flags. Empty lists until the flags are read: the defaults depend on the platform.
struct FusedGemmSettings {
  std::vector<int64_t> global_m;
  std::vector<GemmShape> shapes;
  xcclDataType_t in_type = xcclBfloat16;
  // fp8's scales: per token and channel (ptpc) or in blocks (--dtype fp8-block).
  xcclAgGemmScales_t scales = xcclAgGemmScalesDefault;
  std::string plugin;
  int rounds = 3;
  // Where the lists came from, for the header: "as given" or which defaults.
  std::string m_from = "as given", shapes_from = "as given";

  bool BlockScales() const { return scales == xcclAgGemmScalesBlock128; }
};

// The op's variants of a row, in print order; a binary maps `fused` to its op's mode.
struct OpVariant {
  const char* name;
  bool fused;
  int chunks;  // 0: the op's default rule
};
inline constexpr OpVariant kOpVariants[] = {{"split-xccl", false, 0},
                                            {"fused-c1", true, 1},
                                            {"fused-c2", true, 2},
                                            {"fused-c4", true, 4},
                                            {"fused-def", true, 0}};
constexpr int kOpVariantCount = sizeof(kOpVariants) / sizeof(kOpVariants[0]);
// After the op's variants, the four columns outside it: the split through the vendor library,
// then the op's two halves each alone, in the op's order (the first half makes what the second
// reads, so the second's check covers both), whose times bound the overlap; then both halves at
// once with nothing between them, on the stream and the side stream (the second half over the
// first half's earlier output while the first makes a new one), whose time shows how far this
// device lets the two overlap.
constexpr int kVendorSplit = kOpVariantCount;
constexpr int kFirstHalf = kOpVariantCount + 1;
constexpr int kSecondHalf = kOpVariantCount + 2;
constexpr int kBothHalves = kOpVariantCount + 3;
constexpr int kAllVariants = kOpVariantCount + 4;

// The largest relative L2 error a checked run may show: bf16 rounding of the output (and of
// gemm_rs's partials) gives about 2e-3 each (docs/PERF.md); a wrong band, chunk, owner, scale or
// unwritten row gives far more (as gemm_plugin_perf).
constexpr double kMaxRelL2 = 1e-2;

// The byte every checked output starts as: 0xFFFF is NaN in bf16 and fp16, 0xFF in fp8 e4m3 and
// 0xFFFFFFFF in fp32 (ag_gemm's gathered scales), so any element left unwritten poisons the error.
constexpr uint8_t kPoisonByte = 0xFF;

// Rank `rank`'s operands for a cell (A [m][k], B [n][k], scales): any rank can regenerate any
// rank's (shared with the tests: test/common/float_formats.h).
xccl_test::GemmOperands MakeOperands(int rank, int64_t m, const GemmShape& s,
                                     const FusedGemmSettings& set);

// The double-precision product of row i of a_side's A and row j of b_side's B (each [.][s.k]),
// with A's scales from a_side and B's from b_side as xccl_gemm.h applies them; `m` is the rows
// of a_side's A, the stride of its block scales.
double ReferenceDot(const FusedGemmSettings& set, const GemmShape& s, int64_t m,
                    const xccl_test::GemmOperands& a_side, int64_t i,
                    const xccl_test::GemmOperands& b_side, int64_t j);

// sqrt(sum (got - want)^2 / sum want^2) over a sample: bf16_at(x) is the sampled element x of C
// as the binary lays it out, want[x] its reference. A NaN (a poisoned element left unwritten)
// comes back as infinity: std::max, which the rank reduction and the row's worst use, drops a
// NaN on its right-hand side, so it would vanish.
double SampledRelativeL2(const std::vector<double>& want,
                         const std::function<uint16_t(size_t)>& bf16_at);

// The GEMM the plugin runs when called directly (split-vendor, a GEMM alone): dense row-major
// m rows of A times B [s.n][s.k]^T into bf16 C, with set's scales (block scales m apart).
xcclGemmProblem DirectProblem(const FusedGemmSettings& set, const GemmShape& s, int64_t m,
                              const void* a, const float* a_scale, const void* b,
                              const float* b_scale, void* c);

// One rank's operands in the platform's memory, and the op's output C.
struct StagedOperands {
  Staged a, b, a_scale, b_scale, c;
  bool scaled = false;  // fp8: the scales are staged too

  // The scales as the op and the plugin take them: nullptr without fp8.
  const float* AScales() const { return scaled ? static_cast<const float*>(a_scale.ptr) : nullptr; }
  const float* BScales() const { return scaled ? static_cast<const float*>(b_scale.ptr) : nullptr; }
};

// What the frame runs of one cell (a shape and a global M), by variant index: kOpVariants, then
// kVendorSplit, kFirstHalf, kSecondHalf and kBothHalves.
struct CellVariants {
  // Whether v runs in this cell at all ('-' in its column otherwise).
  std::function<bool(int v)> runs;
  // Resets the buffers v writes to poison, before its first call of the first (checked) round.
  std::function<bool(int v)> poison_outputs;
  // Issues one call of v on the rank's stream; false after saying why.
  std::function<bool(int v)> call;
  // This rank's relative L2 error of v's output after its checked round (never asked of
  // kFirstHalf, whose output the second half's check covers); false if it cannot be read.
  std::function<bool(int v, double* error)> output_error;
};

class FusedGemmOp;

// One rank's run: its device, communicator, vendor communicator (--compare vendor) and the GEMM
// plugin called directly, over every cell of the table.
class FusedGemmRank {
 public:
  FusedGemmRank(const FusedGemmOp& op, const RankContext& ctx, const FusedGemmSettings& set)
      : op_(op), ctx_(ctx), set_(set) {}
  FusedGemmRank(const FusedGemmRank&) = delete;
  FusedGemmRank& operator=(const FusedGemmRank&) = delete;

  // The whole rank: device, communicator, vendor, then every cell. False on any failure or on
  // a checked output over kMaxRelL2 (the run goes on after that one, the exit status is 1).
  bool Run(const xcclUniqueId& id);

  const RankContext& ctx() const { return ctx_; }
  DeviceBuffers& buffers() { return *buffers_; }
  xcclComm_t comm() const { return comm_; }
  // The plugin argument of the op's create: nullptr for XCCL_GEMM_PLUGIN.
  const char* plugin() const { return set_.plugin.empty() ? nullptr : set_.plugin.c_str(); }
  DirectPlugin& gemm() { return *gemm_; }
  VendorComm& vendor() { return *vendor_; }
  // Whether the plugin called directly loaded (split-vendor and the halves alone need it), and
  // whether the vendor split runs (it needs the plugin too).
  bool DirectRuns() const { return gemm_->ok(); }
  bool VendorRuns() const { return vendor_ != nullptr && DirectRuns(); }

  // True if r is success; otherwise says which rank and `what` failed and why, aborts the run.
  bool Ok(xcclResult_t r, const char* what) const;
  // Stages o (its scales where fp8) and a C of c_bytes copied from `poison`; false after saying
  // so and aborting the run if an allocation or copy failed.
  bool Stage(const xccl_test::GemmOperands& o, const std::vector<uint8_t>& poison, size_t c_bytes,
             StagedOperands* staged);

  // Times the cell's variants: --rounds rounds of each, interleaved, every call's time the
  // slowest rank's, each variant's output checked in the first round; then, once no rank has a
  // call in flight, release_ops and, on rank 0, the table row (the op's default chunk count in
  // the def column where it has one). False if the run must stop.
  bool RunVariants(const GemmShape& s, int64_t global_m, int default_chunks,
                   const CellVariants& variants, const std::function<void()>& release_ops);

 private:
  // Ok for a call on `comm` (nullptr before the communicator exists).
  bool Ok(xcclResult_t r, const char* what, xcclComm_t comm) const;
  bool SetUpVendor();
  void PrintRow(const GemmShape& s, int64_t global_m, int default_chunks,
                std::vector<std::vector<double>> times, double worst_l2) const;

  const FusedGemmOp& op_;
  const RankContext& ctx_;
  const FusedGemmSettings& set_;
  std::unique_ptr<DeviceBuffers> buffers_;
  xcclComm_t comm_ = nullptr;
  std::unique_ptr<VendorComm> vendor_;
  std::unique_ptr<DirectPlugin> gemm_;
  bool wrong_ = false;  // a checked output over kMaxRelL2
};

class FusedGemmOp {
 public:
  virtual ~FusedGemmOp() = default;
  // "ag_gemm_perf": starts every message.
  virtual const char* Program() const = 0;
  // "ag_gemm": whose rule on N the --shapes refusal names.
  virtual const char* OpName() const = 0;
  // The lists where --m or --shapes is not given, on GPUs or on the host platform, and the GPU
  // defaults' name for the header.
  virtual void Defaults(bool gpu, std::vector<int64_t>* global_m,
                        std::vector<GemmShape>* shapes) const = 0;
  virtual const char* GpuDefaultsName() const = 0;
  // The own flags' usage, after the harness's (-h).
  virtual void PrintOwnUsage() const = 0;
  // The lines after the run header that explain the columns.
  virtual void PrintLegend(const FusedGemmSettings& set) const = 0;
  // The columns of the halves alone, and whether a def column shows the default's chunk count.
  virtual const char* FirstHalfName() const = 0;
  virtual const char* SecondHalfName() const = 0;
  virtual bool ShowsDefaultChunks() const { return false; }
  // The second half's name in an error message: its check covers the first half's output too.
  virtual const char* SecondHalfCheckName() const = 0;
  // What the vendor split does, for the "# vendor:" line, and why the vendor library cannot run
  // it ("" if it can; it must depend only on what every rank sees alike).
  virtual const char* VendorRole() const = 0;
  virtual std::string VendorCannot(const VendorLibrary&) const { return ""; }
  // Creates the cell's ops, stages its operands and ends with rank.RunVariants; false if the
  // run must stop (after aborting it).
  virtual bool MeasureCell(FusedGemmRank& rank, const FusedGemmSettings& set, const GemmShape& s,
                           int64_t global_m) const = 0;
};

// The whole program: the flags, the run header, the ranks. Returns the exit status.
// built_plugin resolves a plugin name to the one built in this tree (harness/built_plugin.h,
// compiled where the binary's build gives that tree).
int FusedGemmBenchMain(int argc, char** argv, const FusedGemmOp& op,
                       std::string (*built_plugin)(const std::string&));

}  // namespace xccl_perf
