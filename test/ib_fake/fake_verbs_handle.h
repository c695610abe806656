// The fake verbs provider's test controls, reached the way the library reaches the provider:
// dlopen of the same path returns the same instance, so a test and the ib backend share one
// fabric. Header-only, for the unit and mp suites.
#pragma once

#include <dlfcn.h>

#include <string>

namespace xccl_test {

struct FakeVerbs {
  int (*configure)(const char*) = nullptr;
  int (*set_port_state)(const char*, int, int) = nullptr;
  int (*inject)(const char*) = nullptr;
  const char* (*last_error)() = nullptr;
  int (*live_objects)() = nullptr;
  long (*writes)() = nullptr;

  // False (with *why) where the fake cannot be opened.
  bool Open(const std::string& path, std::string* why) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);  // kept open: tests share it
    if (handle == nullptr) {
      *why = dlerror();
      return false;
    }
    configure = reinterpret_cast<int (*)(const char*)>(dlsym(handle, "fake_ibv_configure"));
    set_port_state =
        reinterpret_cast<int (*)(const char*, int, int)>(dlsym(handle, "fake_ibv_set_port_state"));
    inject = reinterpret_cast<int (*)(const char*)>(dlsym(handle, "fake_ibv_inject"));
    last_error = reinterpret_cast<const char* (*)()>(dlsym(handle, "fake_ibv_last_error"));
    live_objects = reinterpret_cast<int (*)()>(dlsym(handle, "fake_ibv_live_objects"));
    writes = reinterpret_cast<long (*)()>(dlsym(handle, "fake_ibv_writes"));
    if (!configure || !set_port_state || !inject || !last_error || !live_objects || !writes) {
      *why = path + " lacks the fake's controls";
      return false;
    }
    return true;
  }
};

}  // namespace xccl_test
