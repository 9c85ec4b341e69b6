#include "managed_memory.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "copy.h"
#include "device_memory.h"
#include "driver_state.h"
#include "log.h"
#include "managed_internal.h"

namespace vgpu::driver::managed {

using intercept::DeviceMemory;
using namespace detail;

namespace detail {

std::mutex mu;
std::map<uint64_t, Allocation>& allocations = *new std::map<uint64_t, Allocation>;
std::atomic<int> live{0};
std::atomic<bool> maybe_dirty{false};
std::atomic<bool> edges_pending{false};
bool device_busy = false;

Allocation* holding(uint64_t ptr) {
  auto it = allocations.upper_bound(ptr);
  if (it == allocations.begin()) return nullptr;
  --it;
  return ptr < it->second.base + it->second.mapped ? &it->second : nullptr;
}

void protect(const Allocation& a, size_t first, size_t last, int prot) {
  const uint64_t start = a.granule_start(first);
  const uint64_t end = a.granule_start(last - 1) + a.granule_pages(last - 1);
  mprotect(reinterpret_cast<void*>(start), end - start, prot);
  // Made writable: have the kernel make every page writable now, in one
  // call, rather than take a fault on the first write to each (a fault costs
  // microseconds, more in a VM). Not supported before Linux 5.14: harmless.
  if (prot & PROT_WRITE) madvise(reinterpret_cast<void*>(start), end - start, MADV_POPULATE_WRITE);
}

void granule_span(const Allocation& a, uint64_t ptr, uint64_t size, size_t* first, size_t* last) {
  const uint64_t lo = std::max(ptr, a.base);
  const uint64_t hi = std::min(ptr + size, a.base + a.mapped);
  *first = (lo - a.base) / kGranule;
  *last = hi > lo ? (hi - a.base - 1) / kGranule + 1 : *first;
}

void defer(Connection& c, Status s) {
  if (!ok(s)) c.defer_async_error(s);
}

void fetch_granules(Allocation& a, size_t first, size_t last) {
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  if (device_busy) {
    proto::DeviceSynchronizeReply rep{};
    const Status s = c.call(proto::DeviceSynchronizeRequest{}, {}, &rep);
    defer(c, s);
    device_busy = false;
  }
  for_runs(a, first, last, State::kDevice, [&](size_t from, size_t to) {
    protect(a, from, to, PROT_READ | PROT_WRITE);
    const uint64_t start = a.granule_start(from);
    const uint64_t bytes = a.granule_start(to - 1) + a.granule_bytes(to - 1) - start;
    defer(c, intercept::copy_from_device(c, reinterpret_cast<void*>(start), a.device(start), bytes,
                                         0, true));
    protect(a, from, to, PROT_READ);
    for (size_t g = from; g < to; ++g) a.granules[g] = State::kClean;
  });
  a.all_device = false;
}

void invalidate(Allocation& a, size_t first, size_t last) {
  for (State want : {State::kClean, State::kDirty}) {
    for_runs(a, first, last, want, [&](size_t from, size_t to) {
      protect(a, from, to, PROT_NONE);
      for (size_t g = from; g < to; ++g) a.granules[g] = State::kDevice;
    });
  }
}

void free_device(Connection& c, uint64_t device_base) {
  proto::FreeReply rep{};
  (void)c.call(proto::FreeRequest{device_base}, {}, &rep);
}

}  // namespace detail

namespace {

struct sigaction previous_handler;

// The granules [g, end) a fault at g takes on: more while the walk goes on.
size_t ahead(size_t g, size_t count, size_t* next, size_t* span) {
  *span = g == *next ? std::min(*span * 2, kMostAhead) : kFirstAhead;
  const size_t end = std::min(count, g + *span);
  *next = end;
  return end;
}

// The CPU touched `addr`: true if that was a managed granule's protection
// (now lifted as far as the access needs), false if the fault is not ours.
bool resolve(uint64_t addr) {
  std::lock_guard lock(mu);
  Allocation* a = holding(addr);
  if (!a) return false;
  const size_t g = (addr - a->base) / kGranule;
  switch (a->granules[g]) {
    case State::kDevice:
      // CPU code mostly walks arrays: the granules after this one come in
      // the same request (each fetch is a round trip to the host).
      fetch_granules(*a, g, ahead(g, a->granules.size(), &a->next_read, &a->read_ahead));
      return true;  // a write faults once more, below
    case State::kClean: {
      // The clean granules after it become writable too (at worst, bytes
      // the CPU did not change are copied to the device again).
      const size_t end = ahead(g, a->granules.size(), &a->next_write, &a->write_ahead);
      size_t last = g + 1;
      while (last < end && a->granules[last] == State::kClean) ++last;
      protect(*a, g, last, PROT_READ | PROT_WRITE);
      for (size_t i = g; i < last; ++i) a->granules[i] = State::kDirty;
      maybe_dirty.store(true, std::memory_order_relaxed);
      return true;
    }
    case State::kDirty:
      return false;  // read-write already: a real fault
  }
  return false;
}

void on_fault(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const bool ours = resolve(reinterpret_cast<uint64_t>(info->si_addr));
  errno = saved_errno;
  if (ours) return;
  // Not managed memory: what the program or the system would have done.
  if (previous_handler.sa_flags & SA_SIGINFO) {
    previous_handler.sa_sigaction(sig, info, context);
  } else if (previous_handler.sa_handler != SIG_IGN && previous_handler.sa_handler != SIG_DFL) {
    previous_handler.sa_handler(sig);
  } else {
    // The default action: restore it and let the access fault again.
    sigaction(SIGSEGV, &previous_handler, nullptr);
  }
}

}  // namespace

void detail::install_fault_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &previous_handler);
  });
}

CUresult allocate(size_t size, CUdeviceptr* out, bool host_mapped) {
  if (size == 0 || size > (1ull << 46)) return CUDA_ERROR_INVALID_VALUE;
  install_fault_handler();
  std::lock_guard lock(mu);
  Connection& c = Connection::instance();
  Connection::Lock clock(c);
  // Device allocations are 256-byte aligned; the guest mapping needs a page,
  // so one page more is asked for and the base rounded up inside it.
  const uint64_t mapped = round_up(size, kPage);
  proto::MallocReply rep{};
  if (Status s = c.call(proto::MallocRequest{mapped + kPage}, {}, &rep); !ok(s)) return to_cu(s);
  const uint64_t base = round_up(rep.dptr, kPage);
  void* at = mmap(reinterpret_cast<void*>(base), mapped, PROT_READ,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  if (at != reinterpret_cast<void*>(base)) {
    const int err = errno;
    if (at != MAP_FAILED) munmap(at, mapped);
    free_device(c, rep.dptr);
    intercept::log_line("cuMemAllocManaged: cannot map %llu bytes at the device address 0x%llx "
                        "in this process (%s); returning CUDA_ERROR_OUT_OF_MEMORY",
                        static_cast<unsigned long long>(mapped), static_cast<unsigned long long>(base),
                        at == MAP_FAILED ? strerror(err) : "the address is taken");
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  // Both copies start as zeros, as the CPU's first touch would find them.
  if (Status s = intercept::set_on_device(c, base, 0, size, 0, true); !ok(s)) {
    munmap(at, mapped);
    free_device(c, rep.dptr);
    return to_cu(s);
  }
  Allocation a;
  a.base = base;
  a.size = size;
  a.mapped = mapped;
  a.device_base = rep.dptr;
  a.host_mapped = host_mapped;
  a.granules.assign(round_up(size, kGranule) / kGranule, State::kClean);
  allocations.emplace(base, std::move(a));
  DeviceMemory::instance().add(base, size);
  live.fetch_add(1, std::memory_order_relaxed);
  *out = base;
  return CUDA_SUCCESS;
}

CUresult adopt(CUdeviceptr ptr, size_t size, const char* name) {
  if (size == 0) return CUDA_ERROR_INVALID_VALUE;
  install_fault_handler();
  std::lock_guard lock(mu);
  if (allocations.count(ptr)) return CUDA_SUCCESS;
  if (ptr % kPage != 0) {
    intercept::log_line("__managed__ variable %s is not page-aligned on this device (0x%llx); "
                        "the CPU cannot reach it: not supported",
                        name, static_cast<unsigned long long>(ptr));
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  const uint64_t mapped = round_up(size, kPage);
  void* at = mmap(reinterpret_cast<void*>(ptr), mapped, PROT_NONE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  if (at != reinterpret_cast<void*>(ptr)) {
    if (at != MAP_FAILED) munmap(at, mapped);
    intercept::log_line("__managed__ variable %s: cannot map its address 0x%llx in this process",
                        name, static_cast<unsigned long long>(ptr));
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  Allocation a;
  a.base = ptr;
  a.size = size;
  a.mapped = mapped;
  a.device_base = 0;  // the module's: freed with it, never by cuMemFree
  a.granules.assign(round_up(size, kGranule) / kGranule, State::kDevice);
  a.all_device = true;
  allocations.emplace(ptr, std::move(a));
  live.fetch_add(1, std::memory_order_relaxed);
  return CUDA_SUCCESS;
}

void forget(CUdeviceptr ptr) {
  if (!any()) return;
  std::lock_guard lock(mu);
  auto it = allocations.find(ptr);
  if (it == allocations.end() || it->second.device_base != 0) return;
  munmap(reinterpret_cast<void*>(it->second.base), it->second.mapped);
  allocations.erase(it);
  live.fetch_sub(1, std::memory_order_relaxed);
}

CUresult release(CUdeviceptr ptr) {
  if (!any()) return CUDA_ERROR_NOT_FOUND;
  std::lock_guard lock(mu);
  auto it = allocations.find(ptr);
  if (it == allocations.end()) {
    // The device copy of registered host memory goes with cuMemHostUnregister.
    return in_registered_device(ptr, 1) ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_FOUND;
  }
  // A module's variable, or the program's own memory registered as mapped.
  if (it->second.device_base == 0 || it->second.registered) return CUDA_ERROR_INVALID_VALUE;
  Connection& c = Connection::instance();
  Connection::Lock clock(c);
  proto::FreeReply rep{};
  const Status s =
      intercept::with_async_errors(c, c.call(proto::FreeRequest{it->second.device_base}, {}, &rep));
  if (!ok(s)) return to_cu(s);
  munmap(reinterpret_cast<void*>(it->second.base), it->second.mapped);
  DeviceMemory::instance().remove(it->second.base);
  allocations.erase(it);
  live.fetch_sub(1, std::memory_order_relaxed);
  return CUDA_SUCCESS;
}

bool any() { return live.load(std::memory_order_relaxed) > 0; }

bool host_mapped(uint64_t ptr) {
  if (!any()) return false;
  std::lock_guard lock(mu);
  const Allocation* a = holding(ptr);
  return a && a->host_mapped;
}

bool contains(uint64_t ptr, uint64_t size) {
  if (!any()) return false;
  std::lock_guard lock(mu);
  const Allocation* a = holding(ptr);
  return a && !a->registered && size <= a->base + a->size - ptr;
}

CUresult flush(uint64_t stream) {
  if (!any() || (!maybe_dirty.load(std::memory_order_relaxed) &&
                 !edges_pending.load(std::memory_order_relaxed)))
    return CUDA_SUCCESS;
  std::lock_guard lock(mu);
  Connection& c = Connection::instance();
  Connection::Lock clock(c);
  Status result = flush_registered(c, stream);
  for (auto& [base, a] : allocations) {
    for_runs(a, 0, a.granules.size(), State::kDirty, [&](size_t from, size_t to) {
      const uint64_t start = a.granule_start(from);
      const uint64_t bytes = a.granule_start(to - 1) + a.granule_bytes(to - 1) - start;
      // Staged before this returns: the CPU may write again at once.
      const Status s = intercept::copy_to_device(c, a.device(start),
                                                 reinterpret_cast<const void*>(start), bytes, stream,
                                                 false);
      if (!ok(s) && ok(result)) result = s;
      protect(a, from, to, PROT_READ);
      for (size_t g = from; g < to; ++g) a.granules[g] = State::kClean;
    });
  }
  maybe_dirty.store(false, std::memory_order_relaxed);
  device_busy = true;
  return to_cu(result);
}

void device_may_write(uint64_t ptr, uint64_t size) {
  if (!any()) return;
  std::lock_guard lock(mu);
  device_busy = true;
  if (size == 0) {
    for (auto& [base, a] : allocations) {
      if (a.all_device) continue;
      invalidate(a, 0, a.granules.size());
      a.all_device = true;
    }
    registered_written();
    return;
  }
  if (registered_written(ptr, size)) return;
  Allocation* a = holding(ptr);
  if (a && a->registered) return;  // a CPU address: copies never write through it
  if (!a) return;
  size_t first = 0, last = 0;
  granule_span(*a, ptr, size, &first, &last);
  invalidate(*a, first, last);
}

CUresult before_launch(uint64_t stream) {
  if (!any()) return CUDA_SUCCESS;
  const CUresult r = flush(stream);
  device_may_write(0, 0);
  return r;
}

CUresult fetch(uint64_t ptr, uint64_t size) {
  std::lock_guard lock(mu);
  Allocation* a = holding(ptr);
  if (!a) return CUDA_ERROR_INVALID_VALUE;
  size_t first = 0, last = 0;
  granule_span(*a, ptr, size, &first, &last);
  fetch_granules(*a, first, last);
  return CUDA_SUCCESS;
}

CUresult advise(uint64_t ptr, uint64_t size, CUmem_advise advice, int location) {
  std::lock_guard lock(mu);
  Allocation* a = holding(ptr);
  if (!a || size > a->base + a->size - ptr) return CUDA_ERROR_INVALID_VALUE;
  switch (advice) {
    case CU_MEM_ADVISE_SET_READ_MOSTLY: a->advice.read_mostly = true; break;
    case CU_MEM_ADVISE_UNSET_READ_MOSTLY: a->advice.read_mostly = false; break;
    case CU_MEM_ADVISE_SET_PREFERRED_LOCATION: a->advice.preferred_location = location; break;
    case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION: a->advice.preferred_location = CU_DEVICE_INVALID; break;
    case CU_MEM_ADVISE_SET_ACCESSED_BY: a->advice.accessed_by_device = location == 0; break;
    case CU_MEM_ADVISE_UNSET_ACCESSED_BY: a->advice.accessed_by_device = false; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

void prefetched(uint64_t ptr, int location) {
  std::lock_guard lock(mu);
  if (Allocation* a = holding(ptr)) a->advice.last_prefetch_location = location;
}

bool advice(uint64_t ptr, Advice* out) {
  if (!any()) return false;
  std::lock_guard lock(mu);
  const Allocation* a = holding(ptr);
  if (!a) return false;
  *out = a->advice;
  return true;
}

}  // namespace vgpu::driver::managed
