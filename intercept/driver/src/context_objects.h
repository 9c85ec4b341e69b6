// What each created context owns, so that destroying it frees what it made,
// as CUDA does. All contexts of a process share its one session on the host
// (a VM has one virtual GPU), so the guest remembers which context made each
// object. Objects made in the primary context are not listed: resetting it
// frees the whole session.
#pragma once

#include <cstdint>

namespace vgpu::driver {

struct Context;

namespace owned {

// In the order they are freed: what uses an object goes before it.
enum class Kind : uint8_t {
  kTexture,
  kSurface,
  kEvent,
  kStream,
  kModule,          // cuModuleLoad*: a library (cuLibraryLoad*) belongs to no context
  kArray,
  kMipmappedArray,
  kDeviceMemory,    // cuMemAlloc, pitched, managed and pool allocations
  kHostMemory,      // cuMemAllocHost / cuMemHostAlloc
  kHostRegistered,  // cuMemHostRegister
};

// Records that the calling thread's current context made `handle`; nothing
// when that is the primary context (or none is current).
void add(Kind kind, uint64_t handle);
template <typename Handle>
void add(Kind kind, Handle* handle) { add(kind, reinterpret_cast<uintptr_t>(handle)); }

// The object is gone (freed or destroyed by the program).
void remove(Kind kind, uint64_t handle);
template <typename Handle>
void remove(Kind kind, Handle* handle) { remove(kind, reinterpret_cast<uintptr_t>(handle)); }

// Frees everything `c` made and still holds, with `c` current while it does;
// called by cuCtxDestroy after the context's work has finished.
void release(Context* c);

// The session was reset: every listed object is gone on the host, and its
// handle may be reused.
void forget_all();

}  // namespace owned
}  // namespace vgpu::driver
