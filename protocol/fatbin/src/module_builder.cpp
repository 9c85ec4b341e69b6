#include "module_builder.h"

#include <algorithm>

namespace vgpu::fatbin::detail {
namespace {

bool same_layout(const Kernel& a, const Kernel& b) {
  if (a.param_bytes != b.param_bytes || a.params.size() != b.params.size()) return false;
  for (size_t i = 0; i < a.params.size(); ++i) {
    if (a.params[i].offset != b.params[i].offset || a.params[i].size != b.params[i].size) return false;
  }
  return true;
}

}  // namespace

Error ModuleBuilder::charge(uint64_t bytes) {
  if (bytes > kMaxModuleBytes - used_) return Error::kTooLarge;
  used_ += bytes;
  return Error::kNone;
}

Error ModuleBuilder::add_kernel(Kernel k) {
  if (auto it = kernels_.find(k.name); it != kernels_.end()) {
    Kernel& had = module_.kernels[it->second];
    if (!same_layout(had, k)) return Error::kConflict;
    // Only images for sm_90 and later carry cluster dimensions.
    if (had.cluster[0] == 0) std::copy_n(k.cluster, 3, had.cluster);
    uint32_t& bound_arch = bound_arch_[it->second];
    if (ptx_arch_ != 0 && (bound_arch == 0 || ptx_arch_ < bound_arch)) {
      had.max_threads = k.max_threads;
      bound_arch = ptx_arch_;
    }
    return Error::kNone;
  }
  // The name is held twice (map key and kernel), plus the parameters.
  if (Error e = charge(2 * k.name.size() + k.params.size() * sizeof(Param)); e != Error::kNone) return e;
  kernels_.emplace(k.name, module_.kernels.size());
  bound_arch_.push_back(ptx_arch_);
  module_.kernels.push_back(std::move(k));
  return Error::kNone;
}

Error ModuleBuilder::add_variable(Variable v, bool local) {
  if (auto it = variables_.find(v.name); it != variables_.end()) {
    const Variable& had = module_.variables[it->second];
    if (local) return Error::kNone;
    return had.size == v.size && had.constant == v.constant ? Error::kNone : Error::kConflict;
  }
  // The initial bytes were charged by whoever built them.
  if (Error e = charge(2 * v.name.size()); e != Error::kNone) return e;
  variables_.emplace(v.name, module_.variables.size());
  module_.variables.push_back(std::move(v));
  return Error::kNone;
}

}  // namespace vgpu::fatbin::detail
