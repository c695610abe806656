// A fused op's GEMM side (docs/ARCHITECTURE.md, "Adding a fused op"): the plugin, its context on
// the caller's stream (compute stream 0) and, where asked, a second context on a side stream
// (compute stream 1) so that two GEMM calls of one op call may run at once. Every fused op holds
// one.
#pragma once

#include <memory>
#include <string>

#include "fused/gemm_plugin_loader.h"
#include "platform/side_stream.h"
#include "xccl.h"
#include "xccl_gemm.h"

namespace xccl {

class GemmStreams {
 public:
  GemmStreams() = default;
  ~GemmStreams() { Close(); }
  GemmStreams(const GemmStreams&) = delete;
  GemmStreams& operator=(const GemmStreams&) = delete;

  // Compute stream 0: the plugin's context on `device`, asked to support `problem`; `op` names the
  // op and `problem_text` the problem in the refusal ("<op>: GEMM plugin 'x' does not support
  // ...").
  xcclResult_t Open(std::unique_ptr<GemmPlugin> plugin, int device, const xcclGemmProblem& problem,
                    const char* op, const std::string& problem_text);
  // Compute stream 1: the side stream and a second context, asked to support `problem` too.
  xcclResult_t OpenSideStream(const xcclGemmProblem& problem, const char* op);
  // The side stream first (destroying it waits for its GEMMs, which use the side context), then
  // the contexts. Again: nothing.
  void Close();

  const GemmPlugin& plugin() const { return *plugin_; }
  bool two_streams() const { return side_context_ != nullptr; }
  void* context(int compute_stream) const { return compute_stream == 0 ? context_ : side_context_; }
  // Compute stream 0 is the caller's stream.
  xcclStream_t stream(int compute_stream, xcclStream_t caller) const {
    return compute_stream == 0 ? caller : side_.stream;
  }
  // The side stream waits for the caller's work so far; the caller's for the side's.
  xcclResult_t Fork(xcclStream_t caller) const { return ForkSideStream(side_, caller); }
  xcclResult_t Join(xcclStream_t caller) const { return JoinSideStream(side_, caller); }

 private:
  std::unique_ptr<GemmPlugin> plugin_;
  int device_ = 0;
  void* context_ = nullptr;
  void* side_context_ = nullptr;
  SideStream side_;
};

}  // namespace xccl
