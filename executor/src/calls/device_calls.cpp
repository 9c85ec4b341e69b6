// Device, session and synchronisation calls.
#include <algorithm>
#include <chrono>

#include "vgpu/executor/call_handler.h"

namespace vgpu::executor {

using namespace vgpu::proto;

namespace {


constexpr int kDeviceCount = 1;  // one GPU per daemon (per executor) for now

}  // namespace

Outcome CallHandler::handle(const vgpu_msg_header&, const GoodbyeRequest&,
                            std::span<const uint8_t>) {
  Outcome o;
  o.end_session = true;
  o.set_reply(GoodbyeReply{});
  return o;
}

Outcome CallHandler::handle(const vgpu_msg_header&, const GetDeviceCountRequest&,
                            std::span<const uint8_t>) {
  Outcome o;
  o.set_reply(GetDeviceCountReply{kDeviceCount, 0});
  return o;
}

Outcome CallHandler::handle(const vgpu_msg_header&, const GetDevicePropertiesRequest& r,
                            std::span<const uint8_t>) {
  if (r.device < 0 || r.device >= kDeviceCount) return Outcome::failure(Status::kInvalidDevice);
  const DeviceInfo& d = backend_->device_of(caller_->context);
  GetDevicePropertiesReply rep{};
  std::memcpy(rep.name, d.name.data(), std::min(d.name.size(), sizeof rep.name - 1));
  std::memcpy(rep.uuid, d.uuid.data(), sizeof rep.uuid);
  uint64_t free = 0, total = d.total_memory;
  // The tenant's view of the memory: its cap, not the whole card.
  if (ok(backend_->mem_info(caller_->context, &free, &total))) rep.total_global_mem = total;
  else rep.total_global_mem = d.total_memory;
  static_assert(sizeof rep.attributes == sizeof(int32_t) * kDeviceAttributeCount);
  std::memcpy(rep.attributes, d.attributes.data(), sizeof rep.attributes);
  Outcome o;
  o.set_reply(rep);
  return o;
}

Outcome CallHandler::handle(const vgpu_msg_header&, const DeviceGetAttributeRequest& r,
                            std::span<const uint8_t>) {
  if (r.device < 0 || r.device >= kDeviceCount) return Outcome::failure(Status::kInvalidDevice);
  if (r.attribute < 0 || r.attribute >= kDeviceAttributeCount) return Outcome::failure(Status::kInvalidValue);
  Outcome o;
  o.set_reply(DeviceGetAttributeReply{
      backend_->device_of(caller_->context).attributes[static_cast<size_t>(r.attribute)], 0});
  return o;
}

Outcome CallHandler::handle(const vgpu_msg_header&, const DriverGetVersionRequest&,
                            std::span<const uint8_t>) {
  Outcome o;
  o.set_reply(DriverGetVersionReply{backend_->device_of(caller_->context).driver_version, 0});
  return o;
}

Outcome CallHandler::handle(const vgpu_msg_header& h, const DeviceSynchronizeRequest&,
                            std::span<const uint8_t>) {
  return queue(h, kDefaultStream, Synchronize{});
}

Outcome CallHandler::handle(const vgpu_msg_header& h, const DeviceResetRequest&,
                            std::span<const uint8_t>) {
  return queue(h, kDefaultStream, Reset{});
}

Outcome CallHandler::handle(const vgpu_msg_header& h, const DeviceSetHeapSizeRequest& r,
                            std::span<const uint8_t>) {
  // A heap of no bytes would make every kernel malloc fail; CUDA's driver
  // never grants one. The backend checks the size against the tenant's room.
  if (r.bytes == 0) return Outcome::failure(Status::kInvalidValue);
  return queue(h, kDefaultStream, SetHeapSize{r.bytes});
}

Outcome CallHandler::handle(const vgpu_msg_header&, const TenantUsageRequest&,
                            std::span<const uint8_t>) {
  TenantUsageReply rep{};
  rep.gpu_ns = sink_->gpu_ns(caller_->tenant);
  rep.now_ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                         std::chrono::steady_clock::now().time_since_epoch())
                                         .count());
  return Outcome::replying(rep);
}

Outcome CallHandler::handle(const vgpu_msg_header&, const TenantProcessesRequest&,
                            std::span<const uint8_t>) {
  std::vector<TenantProcess> list;
  if (Status s = sink_->processes(caller_->tenant, &list); !ok(s)) return Outcome::failure(s);
  std::sort(list.begin(), list.end(),
            [](const TenantProcess& a, const TenantProcess& b) { return a.bytes > b.bytes; });
  TenantProcessesReply rep{};
  constexpr size_t kMax = sizeof rep.client / sizeof rep.client[0];
  rep.count = static_cast<uint32_t>(std::min(list.size(), kMax));
  for (uint32_t i = 0; i < rep.count; ++i) {
    rep.client[i] = list[i].client;
    rep.pid[i] = list[i].pid;
    rep.bytes[i] = list[i].bytes;
  }
  return Outcome::replying(rep);
}

Outcome CallHandler::handle(const vgpu_msg_header&, const TenantBudgetRequest&,
                            std::span<const uint8_t>) {
  TenantBudget b;
  if (Status s = sink_->budget(caller_->tenant, &b); !ok(s)) return Outcome::failure(s);
  TenantBudgetReply rep{};
  rep.budget_ns = static_cast<uint64_t>(std::max<int64_t>(b.budget_ns, 0));
  rep.spent_ns = static_cast<uint64_t>(std::max<int64_t>(b.spent_ns, 0));
  rep.left_ns = static_cast<uint64_t>(std::max<int64_t>(b.left_ns, 0));
  rep.window_start = b.window_start;
  rep.window_end = b.window_end;
  rep.memory_cap = b.memory_cap;
  rep.flags = (b.limited ? 1u : 0u) | (b.open ? 2u : 0u) | (b.best_effort ? 4u : 0u) |
              (b.bound ? 8u : 0u) | (b.renews ? 16u : 0u);
  rep.on_exhaust = b.on_exhaust;
  // NUL-terminated, cut to fit (the reply is zeroed).
  const auto put = [](const std::string& from, char* to, size_t size) {
    from.copy(to, size - 1);
  };
  put(b.vm, rep.vm, sizeof rep.vm);
  put(b.student, rep.student, sizeof rep.student);
  put(b.course, rep.course, sizeof rep.course);
  put(b.quota, rep.quota, sizeof rep.quota);
  return Outcome::replying(rep);
}

Outcome CallHandler::handle(const vgpu_msg_header&, const MemGetInfoRequest&,
                            std::span<const uint8_t>) {
  MemGetInfoReply rep{};
  if (Status s = backend_->mem_info(caller_->context, &rep.free, &rep.total); !ok(s)) return Outcome::failure(s);
  Outcome o;
  o.set_reply(rep);
  return o;
}

}  // namespace vgpu::executor
