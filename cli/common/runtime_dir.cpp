#include "runtime_dir.h"

#include <unistd.h>

#include <cstdlib>

namespace vgpu::cli {

std::string default_runtime_dir() {
  if (geteuid() == 0) return "/run/vgpu";
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg && *xdg) return std::string(xdg) + "/vgpu";
  return "/tmp/vgpu-" + std::to_string(getuid());
}

std::string resolve_runtime_dir(const std::string& flag_value) {
  if (!flag_value.empty()) return flag_value;
  if (const char* env = std::getenv("VGPU_RUNTIME_DIR"); env && *env) return env;
  return default_runtime_dir();
}

}  // namespace vgpu::cli
