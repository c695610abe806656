/* A library that exports only a newer GEMM plugin ABI's symbol (xcclGemmPlugin_v3), as a plugin
 * built for a later xccl would: the loader must refuse it as too new, naming the symbol, rather
 * than call into a struct it does not know. Its contents are never read. */
const struct {
  unsigned abi_version;
  unsigned struct_size;
  const char* name;
} xcclGemmPlugin_v3 = {3u, 24u, "future"};
