// Context ownership of objects: a map from (kind, handle) to the created
// context that made it. Programs that never create a context pay one relaxed
// load per creation and destruction.
#include "context_objects.h"

#include <cuda.h>

#include <atomic>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "driver_state.h"

namespace vgpu::driver::owned {

namespace {

using Key = std::pair<Kind, uint64_t>;  // ordered by kind first: the order of release

struct Owners {
  std::mutex mu;
  std::map<Key, const Context*> by_object;
  std::atomic<bool> any{false};  // an object was ever listed
  static Owners& instance() {
    static auto* o = new Owners;  // leaked: NVIDIA's runtime calls the driver from exit handlers
    return *o;
  }
};

// Frees one object with the public call a program would use. A failure is
// not the destroy's failure: the context goes anyway, as with CUDA.
void free_one(Kind kind, uint64_t h) {
  auto* p = reinterpret_cast<void*>(static_cast<uintptr_t>(h));
  switch (kind) {
    case Kind::kTexture: (void)cuTexObjectDestroy(h); break;
    case Kind::kSurface: (void)cuSurfObjectDestroy(h); break;
    case Kind::kEvent: (void)cuEventDestroy_v2(static_cast<CUevent>(p)); break;
    case Kind::kStream: (void)cuStreamDestroy_v2(static_cast<CUstream>(p)); break;
    case Kind::kModule: (void)cuModuleUnload(static_cast<CUmodule>(p)); break;
    case Kind::kArray: (void)cuArrayDestroy(static_cast<CUarray>(p)); break;
    case Kind::kMipmappedArray: (void)cuMipmappedArrayDestroy(static_cast<CUmipmappedArray>(p)); break;
    // The stream-ordered free also returns pool allocations to their pool.
    case Kind::kDeviceMemory: (void)cuMemFreeAsync(h, CU_STREAM_LEGACY); break;
    case Kind::kHostMemory: (void)cuMemFreeHost(p); break;
    case Kind::kHostRegistered: (void)cuMemHostUnregister(p); break;
  }
}

}  // namespace

void add(Kind kind, uint64_t handle) {
  const Context* c = current_context();
  if (!c || c->primary) return;
  Owners& o = Owners::instance();
  std::lock_guard lock(o.mu);
  o.by_object[{kind, handle}] = c;
  o.any.store(true, std::memory_order_relaxed);
}

void remove(Kind kind, uint64_t handle) {
  Owners& o = Owners::instance();
  if (!o.any.load(std::memory_order_relaxed)) return;
  std::lock_guard lock(o.mu);
  o.by_object.erase({kind, handle});
}

void release(Context* c) {
  std::vector<Key> mine;
  {
    Owners& o = Owners::instance();
    std::lock_guard lock(o.mu);
    for (auto it = o.by_object.begin(); it != o.by_object.end();) {
      if (it->second == c) {
        mine.push_back(it->first);
        it = o.by_object.erase(it);
      } else {
        ++it;
      }
    }
  }
  if (mine.empty()) return;
  const bool pushed = cuCtxPushCurrent_v2(reinterpret_cast<CUcontext>(c)) == CUDA_SUCCESS;
  for (const auto& [kind, handle] : mine) free_one(kind, handle);
  if (pushed) (void)cuCtxPopCurrent_v2(nullptr);
}

void forget_all() {
  Owners& o = Owners::instance();
  std::lock_guard lock(o.mu);
  o.by_object.clear();
}

}  // namespace vgpu::driver::owned
