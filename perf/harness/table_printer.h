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

// "# nThread 1 nGpus 1 minBytes ... graph: N", the blocking note if -z, then "#".
void PrintRunHeader(const Options& options);

// "# Using devices" and one line per rank (rank, group, pid, host, device) from sync's infos.
void PrintDevices(RankSync& sync);

// nccl-tests' time column: two decimals below 100 us, one below 10000 us, none above.
std::string FormatTime(double usec);

// The "#" line and the three lines that name the out-of-place and in-place columns; with
// `vendor`, also the vendor columns that follow them (see FormatVendorResult).
void PrintTableHeader(bool vendor = false);

// size, count, type, redop, root: the left part of a row.
std::string FormatRowStart(size_t bytes, size_t count, const char* type, const char* redop,
                           int root);

// time, algbw, busbw, #wrong of one placement ("N/A" when not checked).
std::string FormatResult(double usec, double algbw, double busbw, bool checked, int64_t wrong);

// time, busbw and ratio (xccl busbw / vendor busbw) of one placement through the vendor library,
// appended after nccl-tests' columns so that their parsers still read the first thirteen.
std::string FormatVendorResult(double usec, double busbw, double ratio);
// The same three columns as "-": the vendor did not run this case.
std::string FormatVendorMissing();

// "# Out of bounds values : N OK|FAILED", "# Avg bus bandwidth    : X", "#" and a blank line.
void PrintFooter(int64_t errors, double avg_busbw);

// barrier_perf's table: one row per communicator size.
void PrintBarrierRunHeader(const Options& options);
void PrintBarrierTableHeader(bool vendor = false);
std::string FormatBarrierRow(int nranks, double usec, double min_usec, double max_usec);
// The vendor's one-float allreduce (time, min, max) and the ratio vendor time / xccl time, so
// that above 1 means xccl is faster, as in all_gather_perf's ratio; or "-" where it did not run.
std::string FormatBarrierVendor(double usec, double min_usec, double max_usec, double ratio);
std::string FormatBarrierVendorMissing();
void PrintBarrierFooter(double avg_usec);

}  // namespace xccl_perf
