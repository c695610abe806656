// --netns a,b: the benchmark's processes as nodes of one machine. Process p of np enters the
// network namespace netns[p * count / np] (contiguous: -np 4 --netns a,b puts 0-1 in a) (made
// beforehand with `ip netns add`, reached over veth) and a UTS namespace of its own named after it,
// so that xccl groups ranks by that hostname and reaches the other "nodes" over the net backend
// only. Needs root (setns, unshare).
#pragma once

#include <string>
#include <vector>

namespace xccl_perf {

// Splits "a,b" into names; false (and a message) on an empty name.
bool ParseNamespaces(const char* text, std::vector<std::string>* names);

// Moves process `proc` of `procs` into its namespace and names its host after it; false with a
// message on stderr if the kernel refuses. Nothing where `names` is empty.
bool EnterNodeNamespace(const std::vector<std::string>& names, int proc, int procs);

}  // namespace xccl_perf
