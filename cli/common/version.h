// What every vgpu command prints for --version: the release and the versions
// of the protocols it speaks, so a host and a guest (or vgpuctl and vgpud)
// of different releases can be told apart.
#pragma once

#include <string>

namespace vgpu::cli {

// "PROGRAM 0.1.0 (wire protocol 1, hand-over 1, region 2)".
std::string version_line(const std::string& program);

}  // namespace vgpu::cli
