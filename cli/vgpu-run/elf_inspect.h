// What vgpu-run needs to know about a program before running it: whether it
// uses the shared CUDA runtime (which vgpu can replace) or carries a static
// copy (which it cannot).
#pragma once

#include <string>
#include <vector>

namespace vgpu::cli {

struct ProgramInfo {
  bool elf64 = false;
  std::vector<std::string> needed;  // DT_NEEDED entries
  bool has_fatbin = false;          // a .nv_fatbin section: CUDA device code inside
  bool needs_shared_cudart() const;
};

// Reads the ELF headers of `path`. False with `why` if it is not a readable
// 64-bit ELF file.
bool inspect_program(const std::string& path, ProgramInfo* out, std::string* why);

}  // namespace vgpu::cli
