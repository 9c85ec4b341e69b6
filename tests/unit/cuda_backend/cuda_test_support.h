// Shared by the cuda backend's tests: the fixture fat binary, parameter
// packing, a backend over the real worker and the FAKE driver library.
#pragma once

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <stdexcept>
#include <vector>

#include "vgpu/executor/cuda_backend.h"

namespace vgpu::test {

inline std::vector<uint8_t> fixture_fatbin() {
  std::ifstream in(VGPU_CUDA_TEST_FATBIN, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Packs values back to back at the offsets the caller gives.
struct Params {
  std::vector<uint8_t> bytes;
  template <class T>
  Params& at(size_t offset, const T& v) {
    if (bytes.size() < offset + sizeof v) bytes.resize(offset + sizeof v);
    std::memcpy(bytes.data() + offset, &v, sizeof v);
    return *this;
  }
};

inline constexpr const char* kFill = "_Z4fillPiii";
inline constexpr const char* kSpin = "_Z4spiny";
inline constexpr const char* kBump = "_Z4bumpi";
inline constexpr const char* kHang = "_Z4hangPVi";
inline constexpr const char* kFault = "_Z5faultPi";
inline constexpr const char* kTrap = "_Z8trap_nowv";
inline constexpr const char* kCrash = "_Z5crashv";
inline constexpr const char* kPair = "_Z10takes_pair4PairPi";
inline constexpr const char* kSay = "_Z3sayi";
inline constexpr const char* kTexRead = "_Z8tex_readyiiPf";
inline constexpr const char* kUseHeap = "_Z8use_heapi";
inline constexpr const char* kPaired = "_Z6pairedPi";

// A config that runs the real worker over the FAKE driver library.
inline executor::CudaConfig fake_config() {
  executor::CudaConfig c;
  c.driver_library = VGPU_FAKE_LIBCUDA;
  c.worker_path = VGPU_CUDA_WORKER;
  c.staging_slot_bytes = 64 * 1024;  // small, so copies take several chunks
  c.spare_workers = 1;
  c.watchdog = std::chrono::milliseconds(2000);
  c.start_limit = std::chrono::milliseconds(20000);
  return c;
}

// Sets an environment variable for the life of the object (the workers
// started meanwhile inherit it).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_.empty()) unsetenv(name_);
    else setenv(name_, old_.c_str(), 1);
  }

 private:
  const char* name_;
  std::string old_;
};

}  // namespace vgpu::test

#include "vgpu/executor/backend.h"

namespace vgpu::test {

// Queues and runs work as the dispatcher does: accept, then execute.
inline executor::ExecResult run(executor::Backend& b, executor::ContextId ctx, executor::WorkOp op,
                                executor::Handle stream = executor::kDefaultStream) {
  executor::Work w{ctx, stream, std::move(op)};
  if (Status s = b.accept(w); !ok(s)) return {s, 0};
  return b.execute(w);
}

inline executor::Launch launch(executor::Handle fn, std::vector<uint8_t> params,
                               uint32_t blocks = 1, uint32_t threads = 1) {
  executor::Launch l{};
  l.function = fn;
  l.grid[0] = blocks;
  l.grid[1] = l.grid[2] = 1;
  l.block[0] = threads;
  l.block[1] = l.block[2] = 1;
  l.shared_mem = 0;
  l.params = std::move(params);
  return l;
}

// A backend over the real worker and the FAKE driver, with the fixture's
// module loaded into one context per tenant asked for.
struct FakeGpu {
  std::unique_ptr<executor::Backend> backend;
  explicit FakeGpu(executor::CudaConfig config = fake_config()) {
    std::string why;
    const Status st = executor::make_cuda_backend(config, &backend, &why);
    if (!ok(st)) throw std::runtime_error("make_cuda_backend: " + why);
  }
  executor::Backend& operator*() { return *backend; }
  executor::Backend* operator->() { return backend.get(); }

  struct Ctx {
    executor::ContextId id = 0;
    executor::Handle module = 0;
  };
  Ctx context(executor::TenantId tenant) {
    Ctx c;
    if (!ok(backend->create_context(tenant, &c.id))) throw std::runtime_error("create_context");
    const std::vector<uint8_t> image = fixture_fatbin();
    if (!ok(backend->module_load(c.id, image, &c.module))) throw std::runtime_error("module_load");
    return c;
  }
  executor::Handle function(const Ctx& c, const char* name) {
    executor::Handle h = 0;
    executor::FunctionInfo info;
    if (!ok(backend->function_get(c.id, c.module, name, &h, &info))) {
      throw std::runtime_error(std::string("function_get ") + name);
    }
    return h;
  }
};

}  // namespace vgpu::test
