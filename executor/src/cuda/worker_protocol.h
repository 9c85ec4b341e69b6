// What the cuda backend (in vgpud) and a context's worker process
// (vgpu-cuda-worker) say to each other. Two SOCK_SEQPACKET sockets, one message
// per packet, each a fixed struct and an optional tail; one request at a time
// on each socket, answered by exactly one Reply:
//
//   control (fd 3): calls the daemon answers at once (alloc, module, function,
//                   variable, event creation and timing); the loop thread's.
//   work    (fd 4): queued work, one request at a time; the dispatcher's. A
//                   request is one item, or a batch of items (launches,
//                   memsets, copies on the device, small copies to it, event
//                   records and waits, stream destruction) the worker keeps
//                   in flight on the GPU, each on its guest stream's own
//                   driver stream (kBatch). A batch may be answered with its
//                   last items still on the GPU: the next batch continues
//                   behind them, or kFinishBatch waits for them. Nothing else
//                   goes to the work socket while items are in flight.
//   staging (fd 5): the memfd of the context's staging area (staging_area.h).
//
// Start:  vgpu-cuda-worker run   <driver library> <device> <ctx flags> <slot bytes> <pin 0|1>
//         vgpu-cuda-worker probe <driver library> <device>     (fd 3 only)
//   worker -> daemon  Ready (control socket); probe adds DeviceReport and exits.
// Both sides are built from the same tree; the version guards against a stale
// worker binary next to a newer daemon.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace vgpu::executor::cuda::wire {

inline constexpr uint32_t kVersion = 8;
inline constexpr int kControlFd = 3;
inline constexpr int kWorkFd = 4;
inline constexpr int kStagingFd = 5;
// A running worker's own messages go to kLogFd (the daemon's log); its fds 1
// and 2 are files the daemon reads after each work item: what the context's
// kernels printed (the driver writes device printf to stdout) and any other
// output of the driver, kept for the tenant's program, never for the log.
inline constexpr int kLogFd = 6;
inline constexpr uint32_t kMaxNameBytes = 16384;
inline constexpr uint32_t kMaxParamBytes = 32764;
inline constexpr uint32_t kMaxParams = 4096;
inline constexpr size_t kMaxMessageBytes = 64 * 1024;
inline constexpr int kAttributeCount = 160;  // = kDeviceAttributeCount (backend.h)

enum class Op : uint32_t {
  kReady = 1,
  kDevice = 2,
  // control
  kAlloc = 10,       // a = size                          -> a = dptr
  kModuleLoad = 11,  // a = module, b = image bytes; the image's memfd rides along (SCM_RIGHTS)
  kFunctionGet =
      12,        // a = module, b = function; tail: name -> count ParamSlots (layout_known in a)
  kVarGet = 13,  // a = module; tail: name            -> a = dptr, b = bytes
  kFuncAttributes = 14,  // a = function                      -> tail: Attributes
  kEventCreate = 15,     // a = event, value = CU_EVENT_* flags
  kEventElapsed = 16,    // a = start, b = end                -> a = elapsed ns (int64)
  kTextureCreate =
      17,             // tail: CUDA_RESOURCE_DESC, CUDA_TEXTURE_DESC -> a = the driver's CUtexObject
  kSetHeapSize = 18,  // a = bytes (CU_LIMIT_MALLOC_HEAP_SIZE)
  // The context's data area (where its program stages copies): its file
  // rides along (SCM_RIGHTS); the worker maps bytes [a, a + b) of it and
  // registers them with the driver (cuMemHostRegister), so copies between
  // the area and the device are one DMA (kCopyInArea, kCopyOutArea).
  kAttachArea = 19,
  // work
  // The copies move rows when Request::rows.width is not 0 (RowShape):
  // `size` bytes are rows of that width, packed in the staging area.
  kCopyIn = 30,        // a = dst, b = size (through the staging area)
  kCopyOut = 31,       // a = src, b = size (through the staging area)
  kCopyOnDevice = 32,  // a = dst, b = src, c = size
  kSynchronize = 36,
  kFree = 37,          // a = dptr
  kDestroyEvent = 38,  // a = event
  kUnloadModule = 39,  // a = module
  kReset = 40,
  kTextureDestroy = 41,  // a = CUtexObject
  // a = count (0..kMaxBatch; 0 only with items in flight), b = budget
  // ns, c = items the daemon knows are in flight from the last batch,
  // value = depth (1..kMaxInFlight) | kLeaveInFlight | kWorkFollows; tail:
  // count BatchItem records, each followed by its bytes padded to 8.
  //   -> a = how many of the new items were issued, b = how many items
  //      are still in flight; count = how many finished (those carried in
  //      flight first, then the new ones, in order); tail: count
  //      ItemResults, then the bytes of each finished kCopyOut, in order,
  //      each padded to 8
  kBatch = 42,
  // c = items in flight (as kBatch) -> waits for them; count, tail as kBatch
  kFinishBatch = 43,
  // Copies straight between the attached area (kAttachArea) and the device.
  kCopyInArea = 44,   // a = dst, b = size, c = offset in the area
  kCopyOutArea = 45,  // a = src, b = size, c = offset in the area
};

// In kBatch's value: the worker may answer once it has stopped issuing,
// with items still on the GPU, instead of waiting for them: when it stopped
// before the last item (the budget), or, with kWorkFollows (the daemon has
// more to issue right after), at any time.
inline constexpr uint32_t kLeaveInFlight = 1u << 8;
inline constexpr uint32_t kWorkFollows = 1u << 9;

// A batch: at most this many items, at most kMaxInFlight of them on the GPU
// at once. A copy to or from the device travels in the batch, or its reply,
// itself up to kMaxInlineCopyBytes; larger ones go through the staging
// area, alone. The copies from the device in flight at once (carried and
// new) hold at most kMaxReplyCopyBytes, padded, so that any reply fits.
inline constexpr uint32_t kMaxBatch = 256;
inline constexpr uint32_t kMaxInFlight = 16;
inline constexpr uint32_t kMaxInlineCopyBytes = 16 * 1024;
inline constexpr uint32_t kMaxReplyCopyBytes = 48 * 1024;

struct Ready {
  Op op = Op::kReady;
  uint32_t version = kVersion;
  int32_t ok = 0;      // 1: the context is up (run) or the device was read (probe)
  int32_t result = 0;  // the CUresult that stopped it
  int32_t load_error = 0;  // LoadError (driver_api.h) when the driver could not be used
  uint32_t pinned = 0;     // 1: the staging slots are page-locked
  char message[488] = {};  // why not, NUL-terminated
};

struct DeviceReport {
  Op op = Op::kDevice;
  int32_t driver_version = 0;
  uint64_t total_memory = 0;
  uint8_t uuid[16] = {};
  char name[256] = {};
  int32_t attributes[kAttributeCount] = {};  // indexed by CUdevice_attribute (= cudaDeviceAttr)
};

// A copy of rows (a 2D copy): rows of `width` bytes, each side's `pitch`
// apart; a staged side is packed (its pitch is the width). A source pitch of
// 0 repeats one row. width 0: one contiguous range.
struct RowShape {
  uint64_t width = 0, dst_pitch = 0, src_pitch = 0;
};

struct Request {  // followed by tail_bytes of tail
  Op op{};
  uint32_t tail_bytes = 0;
  uint64_t a = 0, b = 0, c = 0;
  uint32_t grid[3] = {};
  uint32_t block[3] = {};
  uint32_t shared_mem = 0;
  uint32_t value = 0;
  RowShape rows;  // copies only
};

struct Reply {  // followed by `count` ParamSlots (FunctionGet) or one Attributes
  Op op{};
  int32_t result = 0;   // CUresult
  uint64_t a = 0, b = 0;
  uint64_t gpu_ns = 0;  // work: device time between events around it
  uint32_t sticky = 0;  // nonzero: the context hit a sticky error and is unusable
  uint32_t count = 0;
};

struct ParamSlot {
  uint32_t offset = 0;
  uint32_t size = 0;
};

struct Attributes {
  int32_t shared_size_bytes = 0, const_size_bytes = 0, local_size_bytes = 0;
  int32_t max_threads_per_block = 0, num_regs = 0, ptx_version = 0, binary_version = 0;
  int32_t reserved = 0;
};

// BatchItem::flags of a launch: bit 0 cooperative; bits 8-15,
// 16-23, 24-31 the thread block cluster's x, y, z (0 read as 1: none).
inline uint32_t launch_flags(bool cooperative, const uint32_t cluster[3]) {
  return (cooperative ? 1u : 0u) | (cluster[0] & 0xff) << 8 | (cluster[1] & 0xff) << 16 |
         (cluster[2] & 0xff) << 24;
}
inline bool launch_cooperative(uint32_t flags) { return (flags & 1u) != 0; }
inline void launch_cluster(uint32_t flags, uint32_t cluster[3]) {
  for (int i = 0; i < 3; ++i) {
    const uint32_t d = flags >> (8 * (i + 1)) & 0xff;
    cluster[i] = d == 0 ? 1 : d;
  }
}

// What one item of a batch does.
enum class ItemKind : uint32_t {
  kNothing = 0,        // an item with nothing for the GPU (a zero-length copy)
  kLaunch = 1,         // a = function, grid, block, shared_mem, flags; bytes: packed parameters
  kMemset = 2,         // a = dst, b = size, c = byte
  kCopyOnDevice = 3,   // a = dst, b = src, c = size
  kCopyIn = 4,         // a = dst; bytes: the data (at most kMaxInlineCopyBytes)
  kRecordEvent = 5,    // a = event
  kWaitEvent = 6,      // a = event: the stream waits for its last record
  kDestroyStream = 7,  // the item's stream
  kCopyOut = 8,  // a = src, c = size (at most kMaxInlineCopyBytes): the bytes come in the reply
};

// Guest streams reach the driver: 0, 1 and 2 are the guest's default
// streams (legacy, and per-thread), any other handle a stream the worker
// makes the first time it sees it, with these flags and priority.
inline constexpr uint32_t kStreamNonBlocking = 1;  // cudaStreamNonBlocking

struct BatchItem {  // followed by `bytes` of data, padded to 8
  ItemKind kind = ItemKind::kNothing;
  uint32_t bytes = 0;
  uint64_t stream = 0;
  uint32_t stream_flags = 0;
  int32_t stream_priority = 0;
  uint64_t a = 0, b = 0, c = 0;
  uint32_t grid[3] = {};
  uint32_t block[3] = {};
  uint32_t shared_mem = 0;
  uint32_t flags = 0;  // launch_flags()
};

struct ItemResult {
  int32_t result = 0;  // CUresult
  uint32_t reserved = 0;
  uint64_t gpu_ns = 0;  // between the events before and after it
};

static_assert(std::is_trivially_copyable_v<Ready> && sizeof(Ready) == 512);
static_assert(std::is_trivially_copyable_v<DeviceReport> && sizeof(DeviceReport) == 928);
static_assert(std::is_trivially_copyable_v<Request> && sizeof(Request) == 88);
static_assert(std::is_trivially_copyable_v<Reply> && sizeof(Reply) == 40);
static_assert(std::is_trivially_copyable_v<ParamSlot> && sizeof(ParamSlot) == 8);
static_assert(std::is_trivially_copyable_v<Attributes> && sizeof(Attributes) == 32);
static_assert(std::is_trivially_copyable_v<BatchItem> && sizeof(BatchItem) == 80);
static_assert(std::is_trivially_copyable_v<ItemResult> && sizeof(ItemResult) == 16);
static_assert(sizeof(Request) + kMaxNameBytes <= kMaxMessageBytes);
static_assert(sizeof(Reply) + kMaxBatch * sizeof(ItemResult) + kMaxReplyCopyBytes <=
              kMaxMessageBytes);
static_assert(sizeof(Request) + kMaxParamBytes <= kMaxMessageBytes);
static_assert(sizeof(Reply) + kMaxParams * sizeof(ParamSlot) <= kMaxMessageBytes);

}  // namespace vgpu::executor::cuda::wire
