#include "snapshot.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "connection.h"

namespace vgpu::smi {

namespace {

std::string format_uuid(const uint8_t (&u)[16]) {
  char s[48];
  std::snprintf(s, sizeof s,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
                u[14], u[15]);
  return s;
}

std::string text(const char* field, size_t size) { return std::string(field, strnlen(field, size)); }

std::string say(Status s) {
  switch (s) {
    case Status::kNoDevice: return "vgpud cannot be reached from this VM (see the line above)";
    case Status::kDevicesUnavailable: return "vgpud does not admit this VM (see the line above)";
    default: return std::string("vgpud answered ").append(status_name(s));
  }
}

}  // namespace

void attribute_memory(const proto::TenantProcessesReply& held, std::vector<GpuProcess>* processes) {
  const uint32_t n = std::min<uint32_t>(held.count, sizeof held.client / sizeof held.client[0]);
  for (GpuProcess& p : *processes) {
    p.memory_known = true;
    for (uint32_t i = 0; i < n; ++i) {
      const bool mine = held.pid[i] >= 0
                            ? held.pid[i] == p.pid
                            : std::find(p.clients.begin(), p.clients.end(), held.client[i]) != p.clients.end();
      if (mine) p.memory += held.bytes[i];
    }
  }
}

Status take_snapshot(int sample_ms, Snapshot* out, std::string* why) {
  using intercept::Connection;
  Connection& c = Connection::instance();
  const auto fail = [&](Status s) {
    *why = say(s);
    return s;
  };
  proto::TenantUsageReply first{}, second{};
  {
    Connection::Lock lock(c);
    proto::GetDevicePropertiesReply props{};
    if (Status s = c.call(proto::GetDevicePropertiesRequest{0, 0}, {}, &props); !ok(s)) return fail(s);
    out->name = text(props.name, sizeof props.name);
    out->uuid = format_uuid(props.uuid);
    proto::DriverGetVersionReply version{};
    if (Status s = c.call(proto::DriverGetVersionRequest{}, {}, &version); !ok(s)) return fail(s);
    out->cuda_version = version.version;
    proto::MemGetInfoReply mem{};
    if (Status s = c.call(proto::MemGetInfoRequest{}, {}, &mem); !ok(s)) return fail(s);
    out->memory_total = mem.total;
    out->memory_used = mem.total >= mem.free ? mem.total - mem.free : 0;
    proto::TenantBudgetReply b{};
    if (ok(c.call(proto::TenantBudgetRequest{}, {}, &b))) {  // an older vgpud refuses it
      Budget& o = out->budget;
      o.known = true;
      o.limited = b.flags & 1u;
      o.open = b.flags & 2u;
      o.best_effort = b.flags & 4u;
      o.bound = b.flags & 8u;
      o.renews = b.flags & 16u;
      o.budget_ns = b.budget_ns;
      o.spent_ns = b.spent_ns;
      o.left_ns = b.left_ns;
      o.window_start = b.window_start;
      o.window_end = b.window_end;
      o.memory_cap = b.memory_cap;
      o.on_exhaust = b.on_exhaust;
      o.vm = text(b.vm, sizeof b.vm);
      o.student = text(b.student, sizeof b.student);
      o.course = text(b.course, sizeof b.course);
      o.quota = text(b.quota, sizeof b.quota);
    }
    if (Status s = c.call(proto::TenantUsageRequest{}, {}, &first); !ok(s)) return fail(s);
  }
  // The processes first (from /proc), then what vgpud says each holds: a
  // process that started in between shows without memory.
  out->processes = gpu_processes("/proc", getpid());
  {
    Connection::Lock lock(c);
    proto::TenantProcessesReply held{};
    if (ok(c.call(proto::TenantProcessesRequest{}, {}, &held))) {  // an older vgpud refuses it
      attribute_memory(held, &out->processes);
    }
  }
  // The VM's share of the GPU: its charged device time over the host's clock
  // between two samples (as the guest NVML's utilization).
  std::this_thread::sleep_for(std::chrono::milliseconds(sample_ms));
  {
    Connection::Lock lock(c);
    if (Status s = c.call(proto::TenantUsageRequest{}, {}, &second); !ok(s)) return fail(s);
  }
  const uint64_t wall = second.now_ns - first.now_ns;
  const uint64_t gpu = second.gpu_ns - first.gpu_ns;
  out->utilization = wall ? std::min(100.0, 100.0 * static_cast<double>(gpu) / static_cast<double>(wall)) : 0;
  return Status::kSuccess;
}

}  // namespace vgpu::smi
