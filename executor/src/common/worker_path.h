// Where a backend finds its worker executable when none is configured.
#pragma once

#include <string>

namespace vgpu::executor {

// `name` next to the running program (a build tree's bin/, or a `cmake
// --install` prefix's bin/) if it is there, else in ../libexec/vgpu/ beside
// it (the packages' layout: /usr/bin/vgpud, /usr/libexec/vgpu/NAME); the
// first of the two when neither exists, so that the error names a path.
std::string default_worker_path(const char* name);

}  // namespace vgpu::executor
