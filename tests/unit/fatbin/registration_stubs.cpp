#include "registration_stubs.h"

#include <cstdint>

namespace vgpu::fatbin::test {
namespace {

constexpr size_t kMaxHandles = 64;
void* handles[kMaxHandles];  // a handle is the address of one slot

// Function-local: registration runs in static constructors, maybe before ours.
std::vector<Registration>& store() {
  static std::vector<Registration> r;
  return r;
}

Registration* of(void** handle) {
  const auto i = static_cast<size_t>(handle - handles);
  return i < store().size() ? &store()[i] : nullptr;
}

}  // namespace

const std::vector<Registration>& registrations() { return store(); }

const Registration* registration_of(const std::string& function) {
  for (const Registration& r : store()) {
    for (const std::string& f : r.functions) {
      if (f == function) return &r;
    }
  }
  return nullptr;
}

}  // namespace vgpu::fatbin::test

using vgpu::fatbin::test::handles;
using vgpu::fatbin::test::kMaxHandles;

// Signatures as in crt/host_runtime.h; CUDA types that are only passed
// through are void* here. Launch entry points are referenced by the kernel
// stubs but never called.
extern "C" {

void** __cudaRegisterFatBinary(void* wrapper) {
  auto& all = vgpu::fatbin::test::store();
  if (all.size() == kMaxHandles) return nullptr;
  all.push_back({wrapper, {}, {}});
  return &handles[all.size() - 1];
}

void __cudaRegisterFatBinaryEnd(void**) {}
void __cudaUnregisterFatBinary(void**) {}
char __cudaInitModule(void**) { return 0; }

void __cudaRegisterFunction(void** handle, const char*, char*, const char* device_name, int, void*, void*,
                            void*, void*, int*) {
  if (auto* r = vgpu::fatbin::test::of(handle)) r->functions.emplace_back(device_name);
}

void __cudaRegisterVar(void** handle, char*, char*, const char* device_name, int, size_t size, int constant,
                       int) {
  if (auto* r = vgpu::fatbin::test::of(handle)) r->variables.push_back({device_name, size, constant != 0});
}

int __cudaPopCallConfiguration(void*, void*, size_t*, void*) { return 1; }
int __cudaGetKernel(void**, const void*) { return 1; }
int __cudaLaunchKernel(void*, void*, void*, void**, size_t, void*) { return 1; }

}  // extern "C"
