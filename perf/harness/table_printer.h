// The text the benchmarks print. all_gather_perf reproduces nccl-tests' output line for line
// (the run header, "# Using devices", the three-line table header, rows, the footer), so that
// scripts written to parse nccl-tests read it unchanged; barrier_perf uses the same style.
// Only one rank prints; these functions just format and write to stdout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "harness/options.h"
#include "harness/rank_sync.h"

namespace xccl_perf {

// This host's name up to the first dot, as nccl-tests shows it.
std::string ShortHostName();

// "# nThread 1 nGpus 1 minBytes ... graph: 0", the blocking note if -z, then "#".
void PrintRunHeader(const Options& options);

// "# Using devices" and one line per rank (rank, group, pid, host, device) from sync's infos.
void PrintDevices(RankSync& sync);

// nccl-tests' time column: two decimals below 100 us, one below 10000 us, none above.
std::string FormatTime(double usec);

// The "#" line and the three lines that name the out-of-place and in-place columns.
void PrintTableHeader();

// size, count, type, redop, root: the left part of a row.
std::string FormatRowStart(size_t bytes, size_t count, const char* type, const char* redop,
                           int root);

// time, algbw, busbw, #wrong of one placement ("N/A" when not checked).
std::string FormatResult(double usec, double algbw, double busbw, bool checked, int64_t wrong);

// "# Out of bounds values : N OK|FAILED", "# Avg bus bandwidth    : X", "#" and a blank line.
void PrintFooter(int64_t errors, double avg_busbw);

// barrier_perf's table: one row per communicator size.
void PrintBarrierRunHeader(const Options& options);
void PrintBarrierTableHeader();
std::string FormatBarrierRow(int nranks, double usec, double min_usec, double max_usec);
void PrintBarrierFooter(double avg_usec);

}  // namespace xccl_perf
