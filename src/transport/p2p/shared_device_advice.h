// Advice for ranks of one process that share a GPU: the runtime settings under which a rank's
// waiting kernel cannot stall a peer's (lazy module loading, hardware queues). xccl sets no
// other library's variables; it warns, once per process.
#pragma once

namespace xccl {

void AdviseOnSharedDevice(bool shared_in_process);

}  // namespace xccl
