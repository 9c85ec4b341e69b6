#include "common/worker_path.h"

#include <unistd.h>

#include <filesystem>

namespace vgpu::executor {

std::string default_worker_path(const char* name) {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return name;
  const std::string exe(self, static_cast<size_t>(n));
  const std::filesystem::path bin = std::filesystem::path(exe).parent_path();
  const std::string beside = (bin / name).string();
  const std::string libexec = (bin.parent_path() / "libexec" / "vgpu" / name).string();
  if (access(beside.c_str(), X_OK) != 0 && access(libexec.c_str(), X_OK) == 0) return libexec;
  return beside;
}

}  // namespace vgpu::executor
