// Where vgpud and its clients meet: the runtime directory holding the
// hand-over socket. Chosen by --runtime-dir, else VGPU_RUNTIME_DIR, else a
// default: /run/vgpu for root, $XDG_RUNTIME_DIR/vgpu or /tmp/vgpu-$UID otherwise.
#pragma once

#include <string>

#include "vgpu/result.h"

namespace vgpu::cli {

std::string default_runtime_dir();
// The flag's value if given, else the environment, else the default.
std::string resolve_runtime_dir(const std::string& flag_value);
// Makes the runtime directory (its parents too), or checks the one that is
// there: a directory, not a symbolic link, owned by this user (or root), not
// writable by others. Anyone else who could place or swap files in it could
// stand in for vgpud's sockets, or have vgpud chmod what they point to (the
// default /tmp/vgpu-$UID is a name anyone can take first). New: mode 0755 for
// root (students' programs reach its sockets), 0700 otherwise. Invalid
// argument: a link or not a directory; permission denied: another owner, or
// writable by others; unavailable: it cannot be made or examined.
Result prepare_runtime_dir(const std::string& path);

}  // namespace vgpu::cli
