// runtime_features: the rest of the runtime a class meets, each used as
// course material uses it, with results checked:
//
//   1. device flags, stream priorities, event flags;
//   2. pitched memory: cudaMallocPitch, cudaMemcpy2D both ways, a kernel on
//      the pitched rows, cudaMemset2D, cudaMemcpy2DAsync; cudaMalloc3D and
//      cudaMemcpy3D;
//   3. host functions and stream callbacks, in stream order;
//   4. stream-ordered allocation (cudaMallocAsync, cudaFreeAsync) and the
//      default pool's attributes;
//   5. cudaFuncSetAttribute (dynamic shared memory above 48 KiB),
//      occupancy, limits, a peer copy on the one device, peer access refused;
//   6. mapped pinned memory: a kernel writes through the device pointer of
//      cudaHostAllocMapped memory, the CPU reads it after a synchronize.
#include <cstdint>
#include <cstring>
#include <vector>

#include "common.h"

__global__ void scale_rows(float* base, size_t pitch, int width, int height, float factor) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < width && y < height) {
    float* row = reinterpret_cast<float*>(reinterpret_cast<char*>(base) + y * pitch);
    row[x] *= factor;
  }
}

__global__ void fill_index(int n, int* out, int offset) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = i + offset;
}

namespace {

struct CallbackLog {
  int calls = 0;
  int first_seen = -1;       // what the host function found in the buffer
  cudaError_t status = cudaErrorUnknown;
};

void CUDART_CB host_fn(void* data) {
  auto* log = static_cast<CallbackLog*>(data);
  ++log->calls;
}

struct CopyCheck {
  const int* host;
  int* seen;
};
void CUDART_CB read_copied(void* data) {
  auto* c = static_cast<CopyCheck*>(data);
  *c->seen = c->host[1];
}

void CUDART_CB stream_callback(cudaStream_t, cudaError_t status, void* data) {
  auto* log = static_cast<CallbackLog*>(data);
  ++log->calls;
  log->status = status;
}

}  // namespace

int main() {
  vt::set_name("runtime_features");

  // 1. Flags and priorities.
  CUDA_OK(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
  unsigned flags = 0;
  CUDA_OK(cudaGetDeviceFlags(&flags));
  vt::check((flags & cudaDeviceScheduleMask) == cudaDeviceScheduleBlockingSync,
            "cudaSetDeviceFlags(BlockingSync) reads back (0x%x)", flags);
  int least = 0, greatest = 0;
  CUDA_OK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  vt::check(greatest < least, "stream priorities range from %d to %d", least, greatest);
  cudaStream_t high, low;
  CUDA_OK(cudaStreamCreateWithPriority(&high, cudaStreamNonBlocking, greatest));
  CUDA_OK(cudaStreamCreateWithPriority(&low, cudaStreamNonBlocking, least));
  int prio = 1;
  CUDA_OK(cudaStreamGetPriority(high, &prio));
  vt::check(prio == greatest, "a high-priority stream keeps its priority (%d)", prio);
  cudaEvent_t no_timing, blocking;
  CUDA_OK(cudaEventCreateWithFlags(&no_timing, cudaEventDisableTiming));
  CUDA_OK(cudaEventCreateWithFlags(&blocking, cudaEventBlockingSync));

  // 2. Pitched memory.
  const int width = 300, height = 70;
  float* pitched = nullptr;
  size_t pitch = 0;
  CUDA_OK(cudaMallocPitch(reinterpret_cast<void**>(&pitched), &pitch, width * sizeof(float), height));
  vt::check(pitch >= width * sizeof(float), "cudaMallocPitch: pitch %zu for rows of %zu bytes", pitch,
            width * sizeof(float));
  std::vector<float> host(width * height), back(width * height, -1.0f);
  for (int i = 0; i < width * height; ++i) host[i] = static_cast<float>(i);
  CUDA_OK(cudaMemcpy2D(pitched, pitch, host.data(), width * sizeof(float), width * sizeof(float),
                       height, cudaMemcpyHostToDevice));
  dim3 block(16, 16), grid((width + 15) / 16, (height + 15) / 16);
  scale_rows<<<grid, block, 0, high>>>(pitched, pitch, width, height, 2.0f);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaStreamSynchronize(high));
  CUDA_OK(cudaMemcpy2D(back.data(), width * sizeof(float), pitched, pitch, width * sizeof(float),
                       height, cudaMemcpyDeviceToHost));
  bool ok = true;
  for (int i = 0; i < width * height; ++i) ok &= back[i] == 2.0f * static_cast<float>(i);
  vt::check(ok, "cudaMemcpy2D in, a kernel on the pitched rows, cudaMemcpy2D out");
  // A sub-rectangle: columns 10..19 of rows 5..7, into a packed 10x3 buffer.
  float sub[30] = {};
  CUDA_OK(cudaMemcpy2D(sub, 10 * sizeof(float), reinterpret_cast<char*>(pitched) + 5 * pitch + 10 * sizeof(float),
                       pitch, 10 * sizeof(float), 3, cudaMemcpyDeviceToHost));
  vt::check(sub[0] == 2.0f * (5 * width + 10) && sub[29] == 2.0f * (7 * width + 19),
            "a sub-rectangle of pitched memory (%g, %g)", sub[0], sub[29]);
  CUDA_OK(cudaMemset2D(pitched, pitch, 0, width * sizeof(float), height));
  CUDA_OK(cudaMemcpy2DAsync(back.data(), width * sizeof(float), pitched, pitch, width * sizeof(float),
                            height, cudaMemcpyDeviceToHost, low));
  CUDA_OK(cudaStreamSynchronize(low));
  ok = true;
  for (float v : back) ok &= v == 0.0f;
  vt::check(ok, "cudaMemset2D, then cudaMemcpy2DAsync out");
  CUDA_OK(cudaFree(pitched));

  const cudaExtent extent = make_cudaExtent(16 * sizeof(int), 8, 4);
  cudaPitchedPtr volume{};
  CUDA_OK(cudaMalloc3D(&volume, extent));
  std::vector<int> cube(16 * 8 * 4), cube_back(16 * 8 * 4, -1);
  for (size_t i = 0; i < cube.size(); ++i) cube[i] = static_cast<int>(i * 3);
  cudaMemcpy3DParms in{};
  in.srcPtr = make_cudaPitchedPtr(cube.data(), 16 * sizeof(int), 16, 8);
  in.dstPtr = volume;
  in.extent = extent;
  in.kind = cudaMemcpyHostToDevice;
  CUDA_OK(cudaMemcpy3D(&in));
  cudaMemcpy3DParms out{};
  out.srcPtr = volume;
  out.dstPtr = make_cudaPitchedPtr(cube_back.data(), 16 * sizeof(int), 16, 8);
  out.extent = extent;
  out.kind = cudaMemcpyDeviceToHost;
  CUDA_OK(cudaMemcpy3D(&out));
  vt::check(cube_back == cube, "cudaMalloc3D and cudaMemcpy3D in and out (pitch %zu)", volume.pitch);
  CUDA_OK(cudaFree(volume.ptr));

  // 3. Host functions and callbacks run after the work before them.
  const int n = 4096;
  int* dev = nullptr;
  int* pinned = nullptr;
  CUDA_OK(cudaMalloc(&dev, n * sizeof(int)));
  CUDA_OK(cudaMallocHost(&pinned, n * sizeof(int)));
  std::memset(pinned, 0, n * sizeof(int));
  fill_index<<<(n + 255) / 256, 256, 0, low>>>(n, dev, 1000);
  CUDA_OK(cudaMemcpyAsync(pinned, dev, n * sizeof(int), cudaMemcpyDeviceToHost, low));
  int seen = -1;
  CopyCheck check{pinned, &seen};
  CUDA_OK(cudaLaunchHostFunc(low, read_copied, &check));
  CallbackLog fn_log, cb_log;
  CUDA_OK(cudaLaunchHostFunc(low, host_fn, &fn_log));
  CUDA_OK(cudaStreamAddCallback(low, stream_callback, &cb_log, 0));
  CUDA_OK(cudaStreamSynchronize(low));
  vt::check(seen == 1001, "a host function sees the copy queued before it (%d)", seen);
  vt::check(fn_log.calls == 1 && cb_log.calls == 1 && cb_log.status == cudaSuccess,
            "cudaLaunchHostFunc and cudaStreamAddCallback each ran once, status success");

  // 4. Stream-ordered allocation.
  cudaMemPool_t pool;
  CUDA_OK(cudaDeviceGetDefaultMemPool(&pool, 0));
  uint64_t threshold = 64u << 20;
  CUDA_OK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  uint64_t read_threshold = 0;
  CUDA_OK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &read_threshold));
  vt::check(read_threshold == threshold, "the default pool's release threshold reads back");
  int* async_mem = nullptr;
  CUDA_OK(cudaMallocAsync(&async_mem, n * sizeof(int), high));
  uint64_t used = 0;
  CUDA_OK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
  vt::check(used >= n * sizeof(int), "the pool counts the allocation (%llu bytes used)",
            static_cast<unsigned long long>(used));
  fill_index<<<(n + 255) / 256, 256, 0, high>>>(n, async_mem, 7);
  CUDA_OK(cudaMemcpyAsync(pinned, async_mem, n * sizeof(int), cudaMemcpyDeviceToHost, high));
  CUDA_OK(cudaFreeAsync(async_mem, high));
  CUDA_OK(cudaStreamSynchronize(high));
  vt::check(pinned[0] == 7 && pinned[n - 1] == n - 1 + 7,
            "cudaMallocAsync, a kernel and a copy, cudaFreeAsync, in one stream");
  CUDA_OK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
  vt::check(used == 0, "the pool is empty after the free (%llu)", static_cast<unsigned long long>(used));

  // 5. Function attributes, occupancy, limits, peers.
  CUDA_OK(cudaFuncSetAttribute(fill_index, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024));
  cudaFuncAttributes fa{};
  CUDA_OK(cudaFuncGetAttributes(&fa, fill_index));
  vt::check(fa.maxDynamicSharedSizeBytes == 64 * 1024, "cudaFuncSetAttribute: 64 KiB of dynamic shared memory");
  fill_index<<<(n + 255) / 256, 256, 64 * 1024>>>(n, dev, 3);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  int blocks = 0, min_grid = 0, best_block = 0;
  CUDA_OK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fill_index, 256, 0));
  CUDA_OK(cudaOccupancyMaxPotentialBlockSize(&min_grid, &best_block, fill_index));
  vt::check(blocks > 0 && best_block > 0 && min_grid > 0, "occupancy: %d blocks of 256, best block %d",
            blocks, best_block);
  CUDA_OK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, 32u << 20));
  CUDA_OK(cudaDeviceSetLimit(cudaLimitPrintfFifoSize, 4u << 20));
  size_t heap = 0, fifo = 0;
  CUDA_OK(cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize));
  CUDA_OK(cudaDeviceGetLimit(&fifo, cudaLimitPrintfFifoSize));
  vt::check(heap == (32u << 20) && fifo == (4u << 20), "limits read back (heap %zu, printf FIFO %zu)",
            heap, fifo);
  int* dev2 = nullptr;
  CUDA_OK(cudaMalloc(&dev2, n * sizeof(int)));
  CUDA_OK(cudaMemcpyPeer(dev2, 0, dev, 0, n * sizeof(int)));
  std::vector<int> peer(n);
  CUDA_OK(cudaMemcpy(peer.data(), dev2, n * sizeof(int), cudaMemcpyDeviceToHost));
  vt::check(peer[5] == 8, "cudaMemcpyPeer on the one device");
  int can = -1;
  CUDA_OK(cudaDeviceCanAccessPeer(&can, 0, 0));
  vt::check(can == 0, "a device is not its own peer");
  vt::check(cudaDeviceEnablePeerAccess(1, 0) != cudaSuccess, "peer access to another device is refused");
  cudaGetLastError();

  CUDA_OK(cudaEventRecord(blocking, high));
  CUDA_OK(cudaEventRecord(no_timing, high));
  CUDA_OK(cudaEventSynchronize(blocking));
  CUDA_OK(cudaEventSynchronize(no_timing));
  float ms = 0;
  vt::check(cudaEventElapsedTime(&ms, no_timing, no_timing) != cudaSuccess,
            "no elapsed time from an event made without timing");
  cudaGetLastError();

  // 6. Mapped pinned memory.
  int can_map = 0;
  CUDA_OK(cudaDeviceGetAttribute(&can_map, cudaDevAttrCanMapHostMemory, 0));
  vt::check(can_map == 1, "the device can map host memory");
  int* mapped = nullptr;
  CUDA_OK(cudaHostAlloc(&mapped, n * sizeof(int), cudaHostAllocMapped));
  for (int i = 0; i < n; ++i) mapped[i] = -1;
  int* mapped_dev = nullptr;
  CUDA_OK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&mapped_dev), mapped, 0));
  fill_index<<<(n + 255) / 256, 256>>>(n / 2, mapped_dev, 50);  // the first half only
  CUDA_OK(cudaDeviceSynchronize());
  vt::check(mapped[0] == 50 && mapped[n / 2 - 1] == n / 2 - 1 + 50 && mapped[n / 2] == -1 &&
                mapped[n - 1] == -1,
            "a kernel writes mapped pinned memory; the CPU's own values stay where it did not");
  cudaPointerAttributes pa{};
  CUDA_OK(cudaPointerGetAttributes(&pa, mapped));
  vt::check(pa.type == cudaMemoryTypeHost && pa.devicePointer == mapped_dev,
            "mapped memory is host memory with a device pointer (type %d)", static_cast<int>(pa.type));
  CUDA_OK(cudaFreeHost(mapped));

  CUDA_OK(cudaFree(dev));
  CUDA_OK(cudaFree(dev2));
  CUDA_OK(cudaFreeHost(pinned));
  CUDA_OK(cudaStreamDestroy(high));
  CUDA_OK(cudaStreamDestroy(low));
  CUDA_OK(cudaEventDestroy(no_timing));
  CUDA_OK(cudaEventDestroy(blocking));
  vt::pass();
}
