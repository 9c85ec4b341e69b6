// Where vgpud and its clients meet: the runtime directory holding the
// hand-over socket. Chosen by --runtime-dir, else VGPU_RUNTIME_DIR, else a
// default: /run/vgpu for root, $XDG_RUNTIME_DIR/vgpu or /tmp/vgpu-$UID otherwise.
#pragma once

#include <string>

namespace vgpu::cli {

std::string default_runtime_dir();
// The flag's value if given, else the environment, else the default.
std::string resolve_runtime_dir(const std::string& flag_value);

}  // namespace vgpu::cli
