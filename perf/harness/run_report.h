// The -J file: one header object describing the run (when, where, on which devices, with which
// flags) and one record per table row and placement, so that runs can be compared and plotted
// (perf/plot.py) without parsing the text table. Only rank 0 builds and writes it.
#pragma once

#include <string>
#include <vector>

#include "harness/json_value.h"
#include "harness/options.h"
#include "harness/rank_sync.h"

namespace xccl_perf {

class RunReport {
 public:
  // Fills the header fields every benchmark shares from the options and from the RankInfo each
  // rank has published in sync (so it must run after the ranks have met once).
  RunReport(const char* program, const Options& options, RankSync& sync);

  // For the fields only one benchmark has (engine, vendor library).
  JsonObject& header() { return header_; }
  void AddRow(const JsonObject& row) { rows_.push_back(row); }

  // Writes {"header": ..., "rows": [...]}, one row per line, to options.json_path; true without
  // -J. False after saying why the file could not be written.
  bool Write() const;

 private:
  std::string path_;
  JsonObject header_;
  std::vector<JsonObject> rows_;
};

// XCCL_ALLGATHER_ALGO as set in the environment, or "default": the engine a row measured.
std::string AllGatherEngine();

}  // namespace xccl_perf
