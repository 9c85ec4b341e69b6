// libFuzzer target: the host's call handler, with the real sim backend behind
// it, on sequences of arbitrary messages from one guest. Each input is split
// into chunks (a 2-byte length before each): the first fills the guest's data
// area (fat binaries, copy sources), the rest are messages. Another tenant
// exists so that cross-tenant pointers and handles can be tried. Queued work
// is executed as the dispatcher would, so copies, memsets and launches run too.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "vgpu/executor/call_handler.h"
#include "vgpu/executor/sim_backend.h"

using namespace vgpu;
using namespace vgpu::executor;

namespace {

struct Runner final : WorkSink {
  Backend* backend = nullptr;
  void submit(TenantId, Work&& work, const proto::ReplyTo&) override { backend->execute(work); }
  uint64_t gpu_ns(TenantId) override { return 0; }
};

struct World {
  std::unique_ptr<Backend> backend;
  Runner runner;
  std::unique_ptr<CallHandler> calls;
  std::vector<uint8_t> data_area = std::vector<uint8_t>(1 << 16);
  Caller guest, other;
  World() {
    SimConfig config;
    config.device_memory = 64ull << 20;
    config.watchdog = std::chrono::milliseconds(200);
    if (make_sim_backend(config, &backend) != Status::kSuccess) __builtin_trap();
    runner.backend = backend.get();
    calls = std::make_unique<CallHandler>(backend.get(), &runner);
    guest = {1, 0, 1, data_area};
    other = {2, 0, 2, data_area};
    backend->create_context(2, &other.context);
    uint64_t secret = 0;
    backend->mem_alloc(other.context, 4096, &secret);  // something to try to reach
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World* w = new World();
  if (w->backend->create_context(1, &w->guest.context) != Status::kSuccess) return 0;
  size_t pos = 0;
  bool first = true;
  while (pos + 2 <= size) {
    uint16_t len;
    std::memcpy(&len, data + pos, 2);
    pos += 2;
    len = static_cast<uint16_t>(std::min<size_t>(len, size - pos));
    if (first) {
      std::memset(w->data_area.data(), 0, w->data_area.size());
      std::memcpy(w->data_area.data(), data + pos, std::min<size_t>(len, w->data_area.size()));
      first = false;
    } else {
      w->calls->handle(w->guest, {data + pos, len});
    }
    pos += len;
  }
  w->backend->destroy_context(w->guest.context);
  return 0;
}
