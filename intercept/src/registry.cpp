#include "registry.h"

#include <cstring>

#include "device_memory.h"
#include "log.h"

namespace vgpu::intercept {

Registry& Registry::instance() {
  static Registry* r = new Registry();  // never destroyed: used from atexit handlers
  return *r;
}

ModuleRec* Registry::add_module(const void* wrapper) {
  auto m = std::make_unique<ModuleRec>();
  if (fatbin::Error e = fatbin::locate(wrapper, &m->image); e == fatbin::Error::kNone) {
    m->located = true;
  } else {
    m->status = Status::kInvalidKernelImage;
    log_line("cannot read a registered fat binary (%s)", std::string(fatbin::error_name(e)).c_str());
  }
  std::unique_lock lock(mu_);
  modules_.push_back(std::move(m));
  return modules_.back().get();
}

void Registry::add_kernel(ModuleRec* module, const void* host_fun, const char* device_name) {
  auto k = std::make_unique<KernelRec>();
  k->module = module;
  k->name = device_name ? device_name : "";
  std::unique_lock lock(mu_);
  kernels_[host_fun] = k.get();
  kernel_handles_.insert(k.get());
  kernel_store_.push_back(std::move(k));
}

void Registry::add_var(ModuleRec* module, const void* host_var, const char* device_name,
                       uint64_t size, bool constant) {
  auto v = std::make_unique<VarRec>();
  v->module = module;
  v->name = device_name ? device_name : "";
  v->size = size;
  v->constant = constant;
  std::unique_lock lock(mu_);
  vars_[host_var] = v.get();
  var_store_.push_back(std::move(v));
}

KernelRec* Registry::kernel_by_host_fun(const void* host_fun) const {
  std::shared_lock lock(mu_);
  auto it = kernels_.find(host_fun);
  return it == kernels_.end() ? nullptr : it->second;
}

KernelRec* Registry::kernel_by_handle(const void* handle) const {
  std::shared_lock lock(mu_);
  return kernel_handles_.count(handle) ? static_cast<KernelRec*>(const_cast<void*>(handle)) : nullptr;
}

VarRec* Registry::var_by_host(const void* host_var) const {
  std::shared_lock lock(mu_);
  auto it = vars_.find(host_var);
  return it == vars_.end() ? nullptr : it->second;
}

Status Registry::load_module(Connection& c, ModuleRec& m) {
  if (m.host_module) return Status::kSuccess;
  if (!ok(m.status)) return m.status;
  if (!m.parsed) {
    if (fatbin::Error e = fatbin::parse(m.image, &m.info); e != fatbin::Error::kNone) {
      log_line("cannot parse a registered fat binary: %s", std::string(fatbin::error_name(e)).c_str());
      return m.status = Status::kInvalidKernelImage;
    }
    m.parsed = true;
  }
  uint64_t offset = 0;
  if (Status s = c.stage(m.image.size(), &offset); !ok(s)) {
    if (s == Status::kInvalidValue) {
      log_line("a fat binary of %zu bytes does not fit the data area", m.image.size());
      return m.status = Status::kInvalidKernelImage;
    }
    return s;
  }
  std::memcpy(c.data(offset), m.image.data(), m.image.size());
  proto::ModuleLoadReply rep{};
  const Status s = c.call(proto::ModuleLoadRequest{offset, m.image.size()}, {}, &rep);
  c.unstage(offset);
  if (!ok(s)) {
    if (s != Status::kDevicesUnavailable) m.status = s;
    return s;
  }
  m.host_module = rep.module;
  return Status::kSuccess;
}

Status Registry::resolve(Connection& c, KernelRec& k) {
  if (k.host_function) return Status::kSuccess;
  if (!ok(k.status)) return k.status;
  if (Status s = load_module(c, *k.module); !ok(s)) return s;
  k.layout = k.module->info.find_kernel(k.name);
  if (!k.layout) {
    log_line("kernel %s is registered but its fat binary has no parameter layout for it",
             k.name.c_str());
    return k.status = Status::kInvalidDeviceFunction;
  }
  proto::FunctionGetReply rep{};
  const auto name = std::span(reinterpret_cast<const uint8_t*>(k.name.data()), k.name.size());
  if (Status s = c.call(proto::FunctionGetRequest{k.module->host_module}, name, &rep); !ok(s)) {
    if (s != Status::kDevicesUnavailable) k.status = s;
    return s;
  }
  if (rep.param_bytes != k.layout->param_bytes) {
    log_line("kernel %s: the host reads %u parameter bytes, this program packs %u",
             k.name.c_str(), rep.param_bytes, k.layout->param_bytes);
    return k.status = Status::kInvalidKernelImage;
  }
  k.host_function = rep.function;
  return Status::kSuccess;
}

Status Registry::resolve(Connection& c, VarRec& v) {
  if (v.dptr) return Status::kSuccess;
  if (!ok(v.status)) return v.status;
  if (Status s = load_module(c, *v.module); !ok(s)) return s;
  proto::VarGetReply rep{};
  const auto name = std::span(reinterpret_cast<const uint8_t*>(v.name.data()), v.name.size());
  if (Status s = c.call(proto::VarGetRequest{v.module->host_module, v.size}, name, &rep); !ok(s)) {
    if (s != Status::kDevicesUnavailable) v.status = s;
    return s;
  }
  v.dptr = rep.dptr;
  DeviceMemory::instance().add(v.dptr, v.size);
  return Status::kSuccess;
}

}  // namespace vgpu::intercept
