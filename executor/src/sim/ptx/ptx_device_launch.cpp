// Dynamic parallelism: kernels launched from the device. Code built with `-rdc=true` launches
// a kernel by calling the device runtime (cudadevrt): it asks for a parameter buffer for the
// kernel and its shape, fills it, and launches it on a stream. The interpreter answers those
// calls itself; a launched grid waits in the parent's DeviceLaunches and runs once the parent
// grid has finished, in launch order, each with its own children after it.
#include <algorithm>
#include <cstring>
#include <string_view>

#include "ptx_exec.h"

namespace vgpu::executor::sim::ptx {
namespace {

// cudaError_t values a device-side call returns.
constexpr uint32_t kSuccess = 0;
constexpr uint32_t kInvalidValue = 1;
constexpr uint32_t kMemoryAllocation = 2;
constexpr uint32_t kInvalidConfiguration = 9;
constexpr uint32_t kNotSupported = 801;
constexpr uint32_t kLaunchMaxDepthExceeded = 65;
constexpr uint32_t kLaunchPendingCountExceeded = 69;
constexpr uint32_t kInvalidDeviceFunction = 98;

// CUDA's nesting limit, and what the grids of one host launch may hold in launches not yet run
// before a launch is refused: a bound on the worker's memory, where a GPU's is its
// pending-launch buffer.
constexpr uint32_t kMaxDepth = 24;
constexpr size_t kMaxPending = 65536;
constexpr uint64_t kMaxPendingBytes = 64ull << 20;
// A device pointer below this is a null pointer (or a member of one).
constexpr uint64_t kNullAddress = 4096;
// CUDA's parameter buffers are 64-byte aligned.
constexpr uint64_t kBufferAlign = 64;

enum class Call {
  kGetParameterBufferV2, kLaunchDeviceV2, kGetParameterBuffer, kLaunchDevice, kGetLastError,
  kPeekAtLastError, kStreamCreateWithFlags, kStreamDestroy, kGetDevice, kMalloc, kFree,
  kMemcpyAsync, kMemsetAsync, kGetErrorName, kGetErrorString,
};

struct Named { std::string_view name; Call call; };
// Both spellings: CUDA 12+'s __cudaCDP2 names, and the older ones cudadevrt still declares.
constexpr Named kCalls[] = {
    {"__cudaCDP2GetParameterBufferV2", Call::kGetParameterBufferV2},
    {"cudaGetParameterBufferV2", Call::kGetParameterBufferV2},
    {"__cudaCDP2LaunchDeviceV2", Call::kLaunchDeviceV2},
    {"__cudaCDP2LaunchDeviceV2_ptsz", Call::kLaunchDeviceV2},
    {"cudaLaunchDeviceV2", Call::kLaunchDeviceV2},
    {"cudaLaunchDeviceV2_ptsz", Call::kLaunchDeviceV2},
    {"__cudaCDP2GetParameterBuffer", Call::kGetParameterBuffer},
    {"cudaGetParameterBuffer", Call::kGetParameterBuffer},
    {"__cudaCDP2LaunchDevice", Call::kLaunchDevice},
    {"__cudaCDP2LaunchDevice_ptsz", Call::kLaunchDevice},
    {"cudaLaunchDevice", Call::kLaunchDevice},
    {"cudaLaunchDevice_ptsz", Call::kLaunchDevice},
    {"__cudaCDP2GetLastError", Call::kGetLastError},
    {"__cudaCDP2PeekAtLastError", Call::kPeekAtLastError},
    {"__cudaCDP2StreamCreateWithFlags", Call::kStreamCreateWithFlags},
    {"__cudaCDP2StreamDestroy", Call::kStreamDestroy},
    {"__cudaCDP2GetDevice", Call::kGetDevice},
    {"__cudaCDP2Malloc", Call::kMalloc},
    {"__cudaCDP2Free", Call::kFree},
    {"__cudaCDP2MemcpyAsync", Call::kMemcpyAsync},
    {"__cudaCDP2MemcpyAsync_ptsz", Call::kMemcpyAsync},
    {"__cudaCDP2MemsetAsync", Call::kMemsetAsync},
    {"__cudaCDP2MemsetAsync_ptsz", Call::kMemsetAsync},
    {"__cudaCDP2GetErrorName", Call::kGetErrorName},
    {"__cudaCDP2GetErrorString", Call::kGetErrorString},
};

// What the device's cudaGetErrorName / cudaGetErrorString say: the codes its calls return.
struct ErrorText { uint32_t code; const char* name; const char* text; };
constexpr ErrorText kErrors[] = {
    {kSuccess, "cudaSuccess", "no error"},
    {kInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {kMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {kInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
    {kLaunchMaxDepthExceeded, "cudaErrorLaunchMaxDepthExceeded", "launch would exceed maximum depth of nested launches"},
    {kLaunchPendingCountExceeded, "cudaErrorLaunchPendingCountExceeded", "launch failed because launch would exceed cudaLimitDevRuntimePendingLaunchCount"},
    {kInvalidDeviceFunction, "cudaErrorInvalidDeviceFunction", "invalid device function"},
    {kNotSupported, "cudaErrorNotSupported", "operation not supported"},
};

uint64_t error_text(uint32_t code, bool name) {
  for (const ErrorText& e : kErrors)
    if (e.code == code) return reinterpret_cast<uint64_t>(name ? e.name : e.text);
  return reinterpret_cast<uint64_t>(name ? "cudaErrorUnknown" : "unrecognized error code");
}

const Named* find(std::string_view name) {
  for (const Named& n : kCalls)
    if (n.name == name) return &n;
  return nullptr;
}

// The call's parameters: bounds-checked reads of its .param slots.
class Args {
 public:
  Args(const std::vector<const uint8_t*>& slots, const std::vector<uint64_t>& sizes) : slots_(slots), sizes_(sizes) {}
  bool has(size_t i, uint64_t bytes) const { return i < slots_.size() && sizes_[i] >= bytes; }
  uint64_t u64(size_t i) const { uint64_t v = 0; if (has(i, 8)) memcpy(&v, slots_[i], 8); return v; }
  uint32_t u32(size_t i) const { uint32_t v = 0; if (has(i, 4)) memcpy(&v, slots_[i], 4); return v; }
  bool dim3(size_t i, uint32_t out[3]) const {
    if (!has(i, 12)) return false;
    memcpy(out, slots_[i], 12);
    return true;
  }

 private:
  const std::vector<const uint8_t*>& slots_;
  const std::vector<uint64_t>& sizes_;
};

// The kernel a function address names, or UINT32_MAX.
uint32_t kernel_at(const Program& p, uint64_t address) {
  if ((address & kFunctionAddressBase) != kFunctionAddressBase) return UINT32_MAX;
  const uint64_t id = address & ~kFunctionAddressBase;
  if (id >= p.functions.size() || !p.functions[id].is_entry || !p.functions[id].has_body) return UINT32_MAX;
  return (uint32_t)id;
}

uint64_t params_size(const Program& p, uint32_t entry) {
  uint64_t bytes = 0;
  for (uint32_t id : p.functions[entry].params) bytes = std::max(bytes, p.symbols[id].offset + p.symbols[id].size);
  return bytes;
}

// A parameter buffer's bytes taken from (given back to) the grid's part of the launch's budget.
void take(DeviceLaunches& d, uint64_t bytes) {
  d.bytes += bytes;
  d.count += 1;
  d.budget->bytes += bytes;
  d.budget->count += 1;
}
void give_back(DeviceLaunches& d, uint64_t bytes) {
  d.bytes -= bytes;
  d.count -= 1;
  d.budget->bytes -= bytes;
  d.budget->count -= 1;
}

uint64_t buffer_address(ChildLaunch& child) {
  const auto data = reinterpret_cast<uint64_t>(child.params.data());
  return (data + kBufferAlign - 1) & ~(kBufferAlign - 1);
}

// A parameter buffer of `bytes` for a launch to come (entry UINT32_MAX: named at the launch);
// 0 with the reason in `error` (the calling thread's) when the launch holds too much already.
uint64_t new_buffer(DeviceLaunches& d, uint32_t entry, uint64_t bytes, const uint32_t grid[3],
                    const uint32_t block[3], uint32_t shared, uint32_t& error) {
  if (d.depth + 1 > kMaxDepth) { error = kLaunchMaxDepthExceeded; return 0; }
  const uint64_t held = bytes + kBufferAlign;
  if (bytes > kMaxPendingBytes || d.budget->count >= kMaxPending || d.budget->bytes + held > kMaxPendingBytes) {
    error = kLaunchPendingCountExceeded;
    return 0;
  }
  ChildLaunch child;
  child.entry = entry;
  std::copy(grid, grid + 3, child.grid);
  std::copy(block, block + 3, child.block);
  child.dynamic_shared = shared;
  child.params.assign(held, 0);
  const uint64_t address = buffer_address(child);
  take(d, held);
  d.buffers.emplace(address, std::move(child));
  return address;
}

// Queues the launch of the buffer at `address` (its kernel and shape set); a cudaError_t, also
// left in `error` (the calling thread's) when it is one.
uint32_t launch(const Program& p, DeviceLaunches& d, uint64_t address, uint32_t& error) {
  auto it = d.buffers.find(address);
  if (it == d.buffers.end()) return error = kInvalidValue;
  ChildLaunch child = std::move(it->second);
  d.buffers.erase(it);
  const uint64_t threads = uint64_t{child.block[0]} * child.block[1] * child.block[2];
  const bool shape_ok = child.grid[0] && child.grid[1] && child.grid[2] && threads && threads <= 1024 &&
                        child.block[2] <= 64 && child.grid[1] <= 65535 && child.grid[2] <= 65535;
  if (child.entry == UINT32_MAX || kernel_at(p, function_address(child.entry)) == UINT32_MAX) {
    give_back(d, child.params.size());
    return error = kInvalidDeviceFunction;
  }
  if (!shape_ok) {
    give_back(d, child.params.size());
    return error = kInvalidConfiguration;
  }
  d.launched.push_back(std::move(child));
  return kSuccess;
}

// Queues a device-side copy or memset behind the launches before it; a cudaError_t.
uint32_t queue_operation(DeviceLaunches& d, ChildLaunch op, uint32_t& error) {
  if (op.dst < kNullAddress || (op.kind == ChildLaunch::Kind::kCopy && op.src < kNullAddress))
    return error = kInvalidValue;
  if (d.budget->count >= kMaxPending) return error = kLaunchPendingCountExceeded;
  take(d, 0);
  d.launched.push_back(std::move(op));
  return kSuccess;
}

}  // namespace

bool device_runtime_function(std::string_view name) { return find(name) != nullptr; }

bool device_runtime_call(Context& c, Thread& t, const Function& callee, const std::vector<const uint8_t*>& slots,
                         const std::vector<uint64_t>& sizes, uint8_t* ret, uint64_t ret_size) {
  uint32_t& error = t.device_error;
  const Named* named = find(callee.name);
  if (!named || !c.children) {
    c.result.outcome = Outcome::kUnsupported;
    c.result.message = "call of external function " + callee.name;
    return false;
  }
  const Program& p = *c.p;
  const Args a(slots, sizes);
  DeviceLaunches& d = *c.children;
  std::lock_guard lock(d.mu);
  uint64_t result = kSuccess;  // a cudaError_t, or a pointer for the buffer calls
  switch (named->call) {
    case Call::kGetParameterBufferV2: {
      uint32_t grid[3], block[3];
      const uint32_t entry = kernel_at(p, a.u64(0));
      if (!a.dim3(1, grid) || !a.dim3(2, block)) { result = 0; error = kInvalidValue; break; }
      if (entry == UINT32_MAX) { result = 0; error = kInvalidDeviceFunction; break; }
      result = new_buffer(d, entry, params_size(p, entry), grid, block, a.u32(3), error);
      break;
    }
    case Call::kGetParameterBuffer: {
      const uint32_t one[3] = {1, 1, 1};
      result = new_buffer(d, UINT32_MAX, a.u64(1), one, one, 0, error);
      break;
    }
    case Call::kLaunchDeviceV2: result = launch(p, d, a.u64(0), error); break;
    case Call::kLaunchDevice: {
      auto it = d.buffers.find(a.u64(1));
      if (it == d.buffers.end()) { result = error = kInvalidValue; break; }
      uint32_t entry = kernel_at(p, a.u64(0));
      if (!a.dim3(2, it->second.grid) || !a.dim3(3, it->second.block)) entry = UINT32_MAX;
      it->second.entry = entry;
      it->second.dynamic_shared = a.u32(4);
      result = launch(p, d, a.u64(1), error);
      break;
    }
    case Call::kGetLastError: result = error; error = kSuccess; break;
    case Call::kPeekAtLastError: result = error; break;
    case Call::kStreamCreateWithFlags: {
      // Every stream of the device runs its grids after the parent: one handle serves.
      const uint64_t stream = 1;
      if (a.u64(0) < kNullAddress) { result = kInvalidValue; break; }
      memcpy(reinterpret_cast<void*>(a.u64(0)), &stream, 8);
      break;
    }
    case Call::kStreamDestroy: break;
    case Call::kGetDevice: {
      const int32_t device = 0;
      if (a.u64(0) < kNullAddress) { result = kInvalidValue; break; }
      memcpy(reinterpret_cast<void*>(a.u64(0)), &device, 4);
      break;
    }
    case Call::kMalloc: {
      if (!c.env->heap_alloc) { result = kNotSupported; break; }
      if (a.u64(0) < kNullAddress) { result = kInvalidValue; break; }
      const uint64_t address = c.env->heap_alloc(a.u64(1));
      memcpy(reinterpret_cast<void*>(a.u64(0)), &address, 8);
      result = address ? kSuccess : kMemoryAllocation;
      break;
    }
    case Call::kFree:
      if (!c.env->heap_free) { result = kNotSupported; break; }
      c.env->heap_free(a.u64(0));
      break;
    case Call::kGetErrorName: result = error_text(a.u32(0), true); break;
    case Call::kGetErrorString: result = error_text(a.u32(0), false); break;
    case Call::kMemcpyAsync: {  // every kind is one memory here: the worker's
      ChildLaunch op;
      op.kind = ChildLaunch::Kind::kCopy;
      op.dst = a.u64(0);
      op.src = a.u64(1);
      op.bytes = a.u64(2);
      result = queue_operation(d, std::move(op), error);
      break;
    }
    case Call::kMemsetAsync: {
      ChildLaunch op;
      op.kind = ChildLaunch::Kind::kSet;
      op.dst = a.u64(0);
      op.value = (int32_t)a.u32(1);
      op.bytes = a.u64(2);
      result = queue_operation(d, std::move(op), error);
      break;
    }
  }
  if (ret) memcpy(ret, &result, std::min<uint64_t>(ret_size, 8));
  return true;
}

Result run_children(const Program& p, const Environment& env, unsigned host_threads, DeviceLaunches& d) {
  // The parent has finished: no thread adds to the list any more.
  for (size_t i = 0; i < d.launched.size(); ++i) {
    ChildLaunch& child = d.launched[i];
    if (child.kind == ChildLaunch::Kind::kCopy) {
      memmove(reinterpret_cast<void*>(child.dst), reinterpret_cast<const void*>(child.src), child.bytes);
      give_back(d, 0);
      continue;
    }
    if (child.kind == ChildLaunch::Kind::kSet) {
      memset(reinterpret_cast<void*>(child.dst), child.value, child.bytes);
      give_back(d, 0);
      continue;
    }
    Launch l;
    std::copy(child.grid, child.grid + 3, l.grid);
    std::copy(child.block, child.block + 3, l.block);
    l.dynamic_shared = child.dynamic_shared;
    l.params = reinterpret_cast<const void*>(buffer_address(child));
    l.params_size = child.params.size() - (buffer_address(child) - reinterpret_cast<uint64_t>(child.params.data()));
    l.host_threads = host_threads;
    Result r = run_grid(p, child.entry, l, env, d.depth + 1, *d.budget);
    if (r.outcome != Outcome::kOk) {
      r.message = "in " + p.functions[child.entry].name + ", launched from the device: " + r.message;
      return r;
    }
    give_back(d, child.params.size());
    std::vector<uint8_t>().swap(child.params);
  }
  return Result{};
}

}  // namespace vgpu::executor::sim::ptx
