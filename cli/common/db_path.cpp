#include "db_path.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>

namespace vgpu::cli {

namespace {

bool set(const char* s) { return s && *s; }

}  // namespace

std::string default_db_path(bool root, const char* xdg_state_home, const char* home) {
  if (root) return "/var/lib/vgpu/vgpu.db";
  // XDG says a relative XDG_STATE_HOME is invalid and is to be ignored.
  if (set(xdg_state_home) && xdg_state_home[0] == '/') {
    return std::string(xdg_state_home) + "/vgpu/vgpu.db";
  }
  if (set(home)) return std::string(home) + "/.local/state/vgpu/vgpu.db";
  return "";
}

std::string default_db_path() {
  const char* home = std::getenv("HOME");
  if (!set(home)) {
    if (const passwd* pw = getpwuid(getuid())) home = pw->pw_dir;
  }
  return default_db_path(geteuid() == 0, std::getenv("XDG_STATE_HOME"), home);
}

}  // namespace vgpu::cli
