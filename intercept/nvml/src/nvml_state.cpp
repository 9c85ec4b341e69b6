#include "nvml_state.h"

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>

#include "connection.h"

// The one device handle. Programs only pass it back; its address is what
// check_device recognises.
struct nvmlDevice_st {
  unsigned index;
};

namespace vgpu::nvml {

namespace {

nvmlDevice_st g_device{0};
std::mutex g_mu;  // serialises init and shutdown
int g_refs = 0;   // nvmlInit calls not yet shut down (under g_mu)
std::atomic<bool> g_ready{false};  // g_refs > 0, read without the lock by every call
// Fetched by the first successful nvmlInit and kept (never freed: other
// threads may still read it while a last nvmlShutdown runs).
std::atomic<const DeviceInfo*> g_info{nullptr};

Status fetch(DeviceInfo* d) {
  using intercept::Connection;
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  proto::GetDeviceCountReply count{};
  if (Status s = c.call(proto::GetDeviceCountRequest{}, {}, &count); !ok(s)) return s;
  d->count = count.count > 0 ? 1 : 0;  // one virtual GPU per VM
  if (d->count == 0) return Status::kSuccess;
  proto::GetDevicePropertiesReply props{};
  if (Status s = c.call(proto::GetDevicePropertiesRequest{0, 0}, {}, &props); !ok(s)) return s;
  static_assert(sizeof d->name == sizeof props.name && sizeof d->uuid == sizeof props.uuid &&
                sizeof d->attributes == sizeof props.attributes);
  std::memcpy(d->name, props.name, sizeof d->name);
  d->name[sizeof d->name - 1] = '\0';
  std::memcpy(d->uuid, props.uuid, sizeof d->uuid);
  std::memcpy(d->attributes, props.attributes, sizeof d->attributes);
  return Status::kSuccess;
}

}  // namespace

nvmlReturn_t init(unsigned flags) {
  std::lock_guard lock(g_mu);
  const DeviceInfo* info = g_info.load();
  if (!info) {
    auto d = std::make_unique<DeviceInfo>();
    // vgpud not reachable, or not admitting this VM: to the program there is
    // no driver to talk to. The connection has logged which, once.
    if (Status s = fetch(d.get()); !ok(s)) {
      return s == Status::kNoDevice || s == Status::kDevicesUnavailable ? NVML_ERROR_DRIVER_NOT_LOADED
                                                                        : to_nvml(s);
    }
    info = d.release();
    g_info.store(info);
  }
  if (info->count == 0 && !(flags & NVML_INIT_FLAG_NO_GPUS)) return NVML_ERROR_GPU_NOT_FOUND;
  ++g_refs;
  g_ready.store(true);
  return NVML_SUCCESS;
}

nvmlReturn_t shutdown() {
  std::lock_guard lock(g_mu);
  if (g_refs == 0) return NVML_ERROR_UNINITIALIZED;
  // The connection stays open: the process may nvmlInit again, and the host
  // releases the session when the process exits.
  g_ready.store(--g_refs > 0);
  return NVML_SUCCESS;
}

nvmlReturn_t check_init(const DeviceInfo** out) {
  if (!g_ready.load()) return NVML_ERROR_UNINITIALIZED;
  if (out) *out = g_info.load();
  return NVML_SUCCESS;
}

nvmlReturn_t check_device(nvmlDevice_t handle, const DeviceInfo** out) {
  const DeviceInfo* info = nullptr;
  if (nvmlReturn_t r = check_init(&info); r != NVML_SUCCESS) return r;
  if (handle != &g_device || info->count == 0) return NVML_ERROR_INVALID_ARGUMENT;
  if (out) *out = info;
  return NVML_SUCCESS;
}

nvmlDevice_t device_handle() { return &g_device; }

nvmlReturn_t to_nvml(Status s) {
  switch (s) {
    case Status::kSuccess: return NVML_SUCCESS;
    case Status::kInvalidValue:
    case Status::kInvalidDevice: return NVML_ERROR_INVALID_ARGUMENT;
    case Status::kMemoryAllocation: return NVML_ERROR_MEMORY;
    case Status::kNotSupported: return NVML_ERROR_NOT_SUPPORTED;
    case Status::kNotPermitted: return NVML_ERROR_NO_PERMISSION;
    case Status::kNoDevice: return NVML_ERROR_DRIVER_NOT_LOADED;
    // vgpud went away (or stopped admitting the VM) after nvmlInit.
    case Status::kDevicesUnavailable: return NVML_ERROR_GPU_IS_LOST;
    default: return NVML_ERROR_UNKNOWN;
  }
}

nvmlReturn_t copy_string(std::string_view s, char* out, unsigned length) {
  if (!out) return NVML_ERROR_INVALID_ARGUMENT;
  if (s.size() >= length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, s.data(), s.size());
  out[s.size()] = '\0';
  return NVML_SUCCESS;
}

}  // namespace vgpu::nvml
