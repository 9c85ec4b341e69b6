// Helpers for the sim backend's tests: a backend with the test plug-in and a
// short watchdog, running work the way the dispatcher does, reading the
// fixture fat binary, and counting worker processes.
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "vgpu/executor/sim_backend.h"

namespace Catch {
template <>
struct StringMaker<vgpu::Status> {
  static std::string convert(vgpu::Status s) { return std::string(vgpu::status_name(s)); }
};
}  // namespace Catch

namespace vgpu::executor::test {

inline SimConfig test_config() {
  SimConfig c;
  c.device_memory = 1ull << 30;
  c.worker_path = VGPU_SIM_WORKER;
  c.plugin_paths = {VGPU_SIM_TEST_PLUGIN};
  c.watchdog = std::chrono::milliseconds(200);
  return c;
}

inline std::unique_ptr<Backend> make_backend(const SimConfig& config = test_config()) {
  std::unique_ptr<Backend> b;
  REQUIRE(make_sim_backend(config, &b) == Status::kSuccess);
  REQUIRE(b);
  return b;
}

inline ContextId new_context(Backend& b, TenantId tenant) {
  ContextId ctx = 0;
  REQUIRE(b.create_context(tenant, &ctx) == Status::kSuccess);
  return ctx;
}

inline uint64_t alloc(Backend& b, ContextId ctx, uint64_t size) {
  uint64_t p = 0;
  REQUIRE(b.mem_alloc(ctx, size, &p) == Status::kSuccess);
  REQUIRE(p != 0);
  return p;
}

// accept() then execute(), as the dispatcher does; accept's error if any.
inline ExecResult run(Backend& b, ContextId ctx, WorkOp op, Handle stream = kDefaultStream) {
  Work w{ctx, stream, std::move(op)};
  const Status st = b.accept(w);
  if (!ok(st)) return {st, 0};
  return b.execute(w);
}

inline Status put(Backend& b, ContextId ctx, uint64_t dst, const void* src, uint64_t size) {
  return run(b, ctx, CopyHtoD{dst, static_cast<const uint8_t*>(src), size}).status;
}

inline Status get(Backend& b, ContextId ctx, void* dst, uint64_t src, uint64_t size) {
  return run(b, ctx, CopyDtoH{src, static_cast<uint8_t*>(dst), size}).status;
}

// `n` bytes of device memory at `p` (a failed read fails the test).
inline std::vector<uint8_t> read(Backend& b, ContextId ctx, uint64_t p, size_t n) {
  std::vector<uint8_t> v(n, 0xEE);
  REQUIRE(get(b, ctx, v.data(), p, n) == Status::kSuccess);
  return v;
}

template <class T>
T get_value(Backend& b, ContextId ctx, uint64_t src) {
  T v{};
  REQUIRE(get(b, ctx, &v, src, sizeof v) == Status::kSuccess);
  return v;
}

inline std::vector<uint8_t> fixture_fatbin() {
  std::ifstream in(VGPU_SIM_TEST_FATBIN, std::ios::binary);
  REQUIRE(in.good());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Packs kernel arguments at the given offsets into a buffer of `size` bytes.
class Params {
 public:
  explicit Params(size_t size) : bytes_(size, 0) {}
  template <class T>
  Params& at(size_t offset, const T& v) {
    REQUIRE(offset + sizeof v <= bytes_.size());
    std::memcpy(bytes_.data() + offset, &v, sizeof v);
    return *this;
  }
  std::vector<uint8_t> take() { return std::move(bytes_); }

 private:
  std::vector<uint8_t> bytes_;
};

// sim_fixture.cu's fat binary, loaded into `ctx`.
inline Handle load_fixture(Backend& b, ContextId ctx) {
  const auto image = fixture_fatbin();
  Handle m = 0;
  REQUIRE(b.module_load(ctx, image, &m) == Status::kSuccess);
  CHECK(m > 2);
  return m;
}

inline Handle function(Backend& b, ContextId ctx, Handle module, const char* name,
                       FunctionInfo* info_out = nullptr) {
  Handle f = 0;
  FunctionInfo info;
  REQUIRE(b.function_get(ctx, module, name, &f, &info) == Status::kSuccess);
  if (info_out) *info_out = info;
  return f;
}

inline Launch launch(Handle fn, std::vector<uint8_t> params, uint32_t grid = 1,
                     uint32_t block = 1) {
  return Launch{fn, {grid, 1, 1}, {block, 1, 1}, 0, std::move(params)};
}

// Live vgpu-sim-worker processes that are children of this process.
inline int count_workers() {
  int n = 0;
  DIR* d = opendir("/proc");
  if (!d) return -1;
  const std::string self = std::to_string(getpid());
  while (dirent* e = readdir(d)) {
    std::ifstream stat(std::string("/proc/") + e->d_name + "/stat");
    std::string pid, comm, state, ppid;
    if (!(stat >> pid >> comm >> state >> ppid)) continue;
    if (comm == "(vgpu-sim-worker)" && ppid == self && state != "Z") ++n;
  }
  closedir(d);
  return n;
}

}  // namespace vgpu::executor::test
