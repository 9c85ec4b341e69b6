#include "runtime_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

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

Result prepare_runtime_dir(const std::string& path) {
  const std::filesystem::path dir(path);
  std::error_code ec;
  if (dir.has_parent_path()) std::filesystem::create_directories(dir.parent_path(), ec);
  if (ec)
    return Result::unavailable("cannot create " + dir.parent_path().string() + ": " + ec.message());
  if (mkdir(path.c_str(), geteuid() == 0 ? 0755 : 0700) != 0 && errno != EEXIST)
    return Result::unavailable("cannot create " + path + ": " + std::strerror(errno));
  struct stat st{};
  if (lstat(path.c_str(), &st) != 0)
    return Result::unavailable("cannot examine " + path + ": " + std::strerror(errno));
  if (S_ISLNK(st.st_mode)) {
    return Result::invalid_argument(
        path + " is a symbolic link; the runtime directory must be a real directory");
  }
  if (!S_ISDIR(st.st_mode)) return Result::invalid_argument(path + " is not a directory");
  if (st.st_uid != geteuid() && st.st_uid != 0) {
    return Result::permission_denied(path + " belongs to uid " + std::to_string(st.st_uid) +
                                     ", not to this user: someone else made it first (remove "
                                     "it, or pick another --runtime-dir)");
  }
  if (st.st_mode & S_IWOTH) {
    return Result::permission_denied(
        path + " is writable by everyone; make it 0755 or 0700 (or pick another --runtime-dir)");
  }
  return {};
}

}  // namespace vgpu::cli
