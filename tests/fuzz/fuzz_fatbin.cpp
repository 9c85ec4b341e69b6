// libFuzzer target: the fat binary parser on arbitrary bytes, as the host runs
// it on every module a guest loads (kernel parameter metadata included).
#include <cstddef>
#include <cstdint>

#include "vgpu/fatbin/fatbin.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  vgpu::fatbin::Module module;
  if (vgpu::fatbin::parse({data, size}, &module) == vgpu::fatbin::Error::kNone) {
    // A parsed module must be self-consistent: every parameter inside its buffer.
    for (const auto& k : module.kernels) {
      for (const auto& p : k.params) {
        if (p.offset > k.param_bytes || p.size > k.param_bytes - p.offset) __builtin_trap();
      }
    }
  }
  return 0;
}
