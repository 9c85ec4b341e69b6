// The program's own memory registered as mapped (cuMemHostRegister with
// DEVICEMAP): managed memory whose device copy lies at another address. The
// pages wholly inside the range are an Allocation of managed_memory.cpp with
// a device_delta, so faults, flushes and invalidations treat them as any
// managed granule. The bytes of a first or last page that the range shares
// with other data (a malloc'd buffer's neighbours, malloc's own headers) are
// never protected: a fault there could come from inside malloc or a system
// call. Those "edges" go to the device before device work while the CPU owns
// them, and come back at the next synchronising call after device work may
// have written them.
#include <sys/mman.h>

#include "copy.h"
#include "device_memory.h"
#include "driver_state.h"
#include "log.h"
#include "managed_internal.h"

namespace vgpu::driver::managed {

using intercept::DeviceMemory;
using namespace detail;

namespace {

struct Edge {
  uint64_t cpu = 0;
  uint64_t bytes = 0;
};

struct Registration {
  uint64_t cpu = 0;       // what the program registered
  uint64_t size = 0;
  uint64_t device = 0;    // the device copy of cpu (the host allocation's start)
  uint64_t interior = 0;  // base of the Allocation of its whole pages; 0 if none
  Edge edges[2];          // bytes of partly covered pages
  bool edges_stale = false;  // device work may have written them since the CPU fetched

  uint64_t device_of(uint64_t at) const { return device + (at - cpu); }
  bool has_edges() const { return edges[0].bytes || edges[1].bytes; }
  uint64_t first_page() const { return round_down(cpu, kPage); }
  uint64_t end_page() const { return round_up(cpu + size, kPage); }
};

// By CPU address; guarded by mu. Leaked, as allocations.
std::map<uint64_t, Registration>& registrations = *new std::map<uint64_t, Registration>;
std::atomic<bool> stale_edges{false};  // some registration's edges_stale

// Recomputes the two hints from the registrations (mu held).
void update_hints() {
  bool pending = false, stale = false;
  for (const auto& [cpu, r] : registrations) {
    if (!r.has_edges()) continue;
    (r.edges_stale ? stale : pending) = true;
  }
  edges_pending.store(pending, std::memory_order_relaxed);
  stale_edges.store(stale, std::memory_order_relaxed);
}

// The device's bytes of r's edges become the CPU's (mu and connection held).
void fetch_edges(Connection& c, Registration& r) REQUIRES(c.mutex()) {
  for (const Edge& e : r.edges) {
    if (!e.bytes) continue;
    // Blocking: the VM's earlier work runs first, whatever its stream.
    defer(c, intercept::copy_from_device(c, reinterpret_cast<void*>(e.cpu), r.device_of(e.cpu),
                                         e.bytes, 0, true));
  }
  r.edges_stale = false;
}

Registration* by_device(uint64_t ptr, uint64_t size) {
  for (auto& [cpu, r] : registrations) {
    if (ptr >= r.device && size <= r.size && ptr - r.device <= r.size - size) return &r;
  }
  return nullptr;
}

}  // namespace

CUresult register_host(void* ptr, size_t size, CUdeviceptr* device) {
  const auto cpu = reinterpret_cast<uint64_t>(ptr);
  if (!ptr || !device || size == 0 || size > (1ull << 46) || cpu + size < cpu)
    return CUDA_ERROR_INVALID_VALUE;
  install_fault_handler();
  std::lock_guard lock(mu);
  Registration r;
  r.cpu = cpu;
  r.size = size;
  for (const auto& [other_cpu, other] : registrations) {
    if (other.first_page() < r.end_page() && r.first_page() < other.end_page())
      return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  }
  for (const auto& [base, a] : allocations) {
    if (a.base < r.end_page() && r.first_page() < a.base + a.mapped) return CUDA_ERROR_INVALID_VALUE;
  }
  Connection& c = Connection::instance();
  Connection::Lock clock(c);
  proto::MallocReply rep{};
  if (Status s = c.call(proto::MallocRequest{size}, {}, &rep); !ok(s)) return to_cu(s);
  r.device = rep.dptr;
  const uint64_t lo = round_up(cpu, kPage), hi = round_down(cpu + size, kPage);
  if (hi > lo) {
    Allocation a;
    a.base = lo;
    a.size = hi - lo;
    a.mapped = hi - lo;
    a.device_base = r.device;
    a.device_delta = r.device - cpu;
    a.registered = true;
    // The CPU holds the program's bytes: the first flush sends them.
    a.granules.assign(round_up(a.size, kGranule) / kGranule, State::kDirty);
    allocations.emplace(lo, std::move(a));
    r.interior = lo;
    r.edges[0] = {cpu, lo - cpu};
    r.edges[1] = {hi, cpu + size - hi};
    maybe_dirty.store(true, std::memory_order_relaxed);
  } else {
    r.edges[0] = {cpu, size};  // no whole page
  }
  registrations.emplace(cpu, r);
  update_hints();
  DeviceMemory::instance().add(r.device, size);
  live.fetch_add(1, std::memory_order_relaxed);
  *device = r.device;
  return CUDA_SUCCESS;
}

CUresult unregister_host(void* ptr) {
  std::lock_guard lock(mu);
  auto it = registrations.find(reinterpret_cast<uint64_t>(ptr));
  if (it == registrations.end()) return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  Registration& r = it->second;
  if (r.interior) {
    Allocation& a = allocations.at(r.interior);
    fetch_granules(a, 0, a.granules.size());
    protect(a, 0, a.granules.size(), PROT_READ | PROT_WRITE);
    allocations.erase(r.interior);
  }
  {
    Connection& c = Connection::instance();
    Connection::Lock clock(c);
    if (r.edges_stale) fetch_edges(c, r);
    free_device(c, r.device);
  }
  DeviceMemory::instance().remove(r.device);
  registrations.erase(it);
  update_hints();
  live.fetch_sub(1, std::memory_order_relaxed);
  return CUDA_SUCCESS;
}

bool registered_host(uint64_t cpu, uint64_t size, uint64_t* device) {
  if (!any()) return false;
  std::lock_guard lock(mu);
  auto it = registrations.upper_bound(cpu);
  if (it == registrations.begin()) return false;
  --it;
  const Registration& r = it->second;
  if (size > r.size || cpu - r.cpu > r.size - size) return false;
  *device = r.device_of(cpu);
  return true;
}

bool registered_device(uint64_t ptr, uint64_t size, uint64_t* cpu) {
  if (!any()) return false;
  std::lock_guard lock(mu);
  return in_registered_device(ptr, size, cpu);
}

void synchronized() {
  if (!stale_edges.load(std::memory_order_relaxed)) return;
  std::lock_guard lock(mu);
  Connection& c = Connection::instance();
  Connection::Lock clock(c);
  for (auto& [cpu, r] : registrations) {
    if (r.edges_stale) fetch_edges(c, r);
  }
  update_hints();
}

namespace detail {

Status flush_registered(Connection& c, uint64_t stream) {
  Status result = Status::kSuccess;
  for (auto& [cpu, r] : registrations) {
    if (r.edges_stale) continue;  // the device's bytes are newer
    for (const Edge& e : r.edges) {
      if (!e.bytes) continue;
      const Status s = intercept::copy_to_device(c, r.device_of(e.cpu),
                                                 reinterpret_cast<const void*>(e.cpu), e.bytes,
                                                 stream, false);
      if (!ok(s) && ok(result)) result = s;
    }
  }
  return result;
}

void registered_written() {
  for (auto& [cpu, r] : registrations) r.edges_stale = r.has_edges();
  update_hints();
}

bool registered_written(uint64_t ptr, uint64_t size) {
  Registration* r = nullptr;
  for (auto& [cpu, reg] : registrations) {
    if (ptr < reg.device + reg.size && reg.device < ptr + size) r = &reg;
  }
  if (!r) return false;
  const uint64_t lo = r->cpu + (std::max(ptr, r->device) - r->device);
  const uint64_t hi = r->cpu + (std::min(ptr + size, r->device + r->size) - r->device);
  if (r->interior) {
    Allocation& a = allocations.at(r->interior);
    size_t first = 0, last = 0;
    if (hi > a.base && lo < a.base + a.mapped) {
      granule_span(a, lo, hi - lo, &first, &last);
      invalidate(a, first, last);
    }
  }
  for (const Edge& e : r->edges) {
    if (e.bytes && lo < e.cpu + e.bytes && e.cpu < hi) r->edges_stale = true;
  }
  update_hints();
  return true;
}

bool in_registered_device(uint64_t ptr, uint64_t size, uint64_t* cpu) {
  const Registration* r = by_device(ptr, size);
  if (r && cpu) *cpu = r->cpu + (ptr - r->device);
  return r != nullptr;
}

}  // namespace detail

}  // namespace vgpu::driver::managed
