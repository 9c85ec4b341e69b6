// Placeholder until the parser lands.
#include "vgpu/fatbin/fatbin.h"
namespace vgpu::fatbin {
std::string_view error_name(Error) { return "unimplemented"; }
const Kernel* Module::find_kernel(std::string_view) const { return nullptr; }
const Variable* Module::find_variable(std::string_view) const { return nullptr; }
Error locate(const void*, std::span<const uint8_t>*) { return Error::kBadMagic; }
Error parse(std::span<const uint8_t>, Module*) { return Error::kNoKernelMetadata; }
}  // namespace vgpu::fatbin
