// libvirt's errors as one line, and libvirt kept off stderr: every failure
// comes back to the caller, who says it once, in its own words.
#pragma once

#include <string>
#include <string_view>

namespace vgpu::virt {

// Once per process, before any other libvirt or libxml2 call: libvirt
// reports errors to us only (virSetErrorFunc), libxml2 is initialised.
void init_libvirt();

// The calling thread's last libvirt error, one line ("" if none);
// `fallback` if libvirt recorded none.
std::string last_error(std::string_view fallback = "unknown libvirt error");
// Its code (virErrorNumber), 0 if none.
int last_error_code();

}  // namespace vgpu::virt
