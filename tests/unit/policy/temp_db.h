// A database file in /tmp for one test, removed (with its WAL) afterwards.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "vgpu/policy/store.h"

namespace vgpu::policy::test {

struct TempDb {
  std::string path = "/tmp/vgpu-policy-test-" + std::to_string(getpid()) + "-" +
                     std::to_string(reinterpret_cast<uintptr_t>(this)) + ".db";
  ~TempDb() {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  }
  std::unique_ptr<Store> open() const {
    std::unique_ptr<Store> s;
    if (!open_sqlite_store(path, &s).ok()) return nullptr;
    return s;
  }
};

inline Actor root() { return Actor{0, "root", Role::kAdmin, 0}; }

}  // namespace vgpu::policy::test
