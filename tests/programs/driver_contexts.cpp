// driver_contexts: a context owns what it makes. Destroying a created context
// frees its device memory, streams, events, modules, arrays and pinned
// memory, whether it is current or not, and leaves the primary context's
// objects alone. Rounds of "create a context, take 40% of the device's
// memory, destroy it" run out of memory by the third round unless each
// destroy frees. argv[1]: a module image (cubin, fat binary or PTX).
#include <vector>

#include "cu_check.h"

namespace {

using vt::check;
using vt::fail;

constexpr int kRounds = 6;
constexpr unsigned kPattern = 0x5eed1234;

// Makes one of each object in the current context; the program frees none.
void fill_context(const char* image, size_t big) {
  CUdeviceptr memory = 0;
  CU_OK(cuMemAlloc(&memory, big));
  CU_OK(cuMemsetD8(memory, 0xab, 4096));
  CUdeviceptr freed_by_program = 0;  // freed here: the destroy must not trip on it
  CU_OK(cuMemAlloc(&freed_by_program, 4096));
  CU_OK(cuMemFree(freed_by_program));
  CUstream stream;
  CU_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CUevent event;
  CU_OK(cuEventCreate(&event, 0));
  CU_OK(cuEventRecord(event, stream));
  CUmodule module;
  CU_OK(cuModuleLoad(&module, image));
  CUDA_ARRAY_DESCRIPTOR desc{};
  desc.Width = 64;
  desc.Height = 64;
  desc.Format = CU_AD_FORMAT_FLOAT;
  desc.NumChannels = 1;
  CUarray array;
  CU_OK(cuArrayCreate(&array, &desc));
  void* pinned = nullptr;
  CU_OK(cuMemAllocHost(&pinned, 1 << 16));
}

}  // namespace

int main(int argc, char** argv) {
  vt::set_name("driver_contexts");
  if (argc < 2) fail("usage: driver_contexts IMAGE (a cubin, fat binary or PTX file)");
  CU_OK(cuInit(0));
  CUdevice dev;
  CU_OK(cuDeviceGet(&dev, 0));

  // The primary context holds an allocation through all the rounds.
  CUcontext primary;
  CU_OK(cuDevicePrimaryCtxRetain(&primary, dev));
  CU_OK(cuCtxSetCurrent(primary));
  CUdeviceptr kept = 0;
  CU_OK(cuMemAlloc(&kept, 1 << 20));
  CU_OK(cuMemsetD32(kept, kPattern, (1 << 20) / 4));
  size_t free_before = 0, total = 0;
  CU_OK(cuMemGetInfo(&free_before, &total));
  const size_t big = (total / 5 * 2) & ~size_t{(1 << 20) - 1};
  check(big > 0 && big < free_before, "the device has %zu MiB; each round takes %zu MiB",
        total >> 20, big >> 20);

  void* last_pinned = nullptr;
  for (int round = 0; round < kRounds; ++round) {
    CUcontext ctx;
    CU_OK(cuCtxCreate(&ctx, nullptr, 0, dev));  // current from here
    fill_context(argv[1], big);
    CU_OK(cuMemAllocHost(&last_pinned, 4096));
    if (round % 2 == 1) {
      // Destroyed from another context: what it made is still its own.
      CUcontext popped = nullptr;
      CU_OK(cuCtxPopCurrent(&popped));
      check(popped == ctx, "round %d: the created context was current", round);
      CU_OK(cuCtxSetCurrent(primary));
    }
    CU_OK(cuCtxDestroy(ctx));
  }
  check(true, "%d rounds of 40%% of the device's memory in a created context", kRounds);

  CU_OK(cuCtxSetCurrent(primary));
  size_t free_after = 0;
  CU_OK(cuMemGetInfo(&free_after, &total));
  check(free_after + (4 << 20) >= free_before,
        "destroyed contexts left nothing behind (free %zu MiB before, %zu MiB after)",
        free_before >> 20, free_after >> 20);
  unsigned flags = 0;
  check(cuMemHostGetFlags(&flags, last_pinned) != CUDA_SUCCESS,
        "a destroyed context's pinned memory is gone");

  std::vector<unsigned> back((1 << 20) / 4);
  CU_OK(cuMemcpyDtoH(back.data(), kept, 1 << 20));
  for (size_t i = 0; i < back.size(); ++i) {
    if (back[i] != kPattern) fail("the primary context's memory changed at word %zu", i);
  }
  check(true, "the primary context's allocation is untouched");
  CU_OK(cuMemFree(kept));
  CU_OK(cuDevicePrimaryCtxRelease(dev));
  vt::pass();
}
