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
//      a device heap larger than CUDA's default 8 MiB holds what a kernel
//      mallocs past it, and its size is fixed once a kernel used it;
//   6. mapped pinned memory: a kernel writes through the device pointer of
//      cudaHostAllocMapped memory, and of cudaMallocHost memory (mapped too,
//      with unified addressing), the CPU reads it after a synchronize;
//   7. the program's own memory registered as mapped (cudaHostRegister with
//      cudaHostRegisterMapped), malloc'd so that its first and last pages
//      hold other data: kernels read and write it through the device pointer,
//      the CPU changes it between launches, a memset and copies reach it.
#include <cstdint>
#include <cstdlib>
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

// Each thread takes `bytes` of the device heap and writes its ends; got[t]
// is 3 when thread t's block was there whole.
__global__ void heap_blocks(int bytes, int* got) {
  char* p = static_cast<char*>(malloc(bytes));
  got[threadIdx.x] = 0;
  if (p) {
    p[0] = 1;
    p[bytes - 1] = 2;
    got[threadIdx.x] = p[0] + p[bytes - 1];
  }
  __syncthreads();  // every block held at once
  free(p);
}

namespace {

// 7. Registered mapped memory: `reg` starts 4 bytes into a malloc'd block and
// ends mid-page, so its first and last pages hold other bytes (`raw[0]`, and
// whatever malloc put after it).
void registered_mapped_memory() {
  const int m = 3017;  // floats: more than two pages
  auto* raw = static_cast<float*>(std::malloc(sizeof(float) * (m + 1)));
  float* reg = raw + 1;
  raw[0] = -5.0f;
  for (int i = 0; i < m; ++i) reg[i] = static_cast<float>(i);
  CUDA_OK(cudaHostRegister(reg, m * sizeof(float), cudaHostRegisterMapped));
  float* reg_dev = nullptr;
  CUDA_OK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&reg_dev), reg, 0));
  const dim3 grid((m + 255) / 256, 1), block(256, 1);
  scale_rows<<<grid, block>>>(reg_dev, m * sizeof(float), m, 1, 2.0f);
  CUDA_OK(cudaDeviceSynchronize());
  int wrong = 0;
  for (int i = 0; i < m; ++i) wrong += reg[i] != 2.0f * i;
  vt::check(wrong == 0 && raw[0] == -5.0f,
            "a kernel doubles registered mapped memory the CPU filled (%d wrong; neighbour %g)",
            wrong, raw[0]);

  // The CPU writes between launches; the next launch reads what it wrote.
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  for (int i = 0; i < m; ++i) reg[i] = 1.0f + (i % 7);
  raw[0] = -6.0f;
  scale_rows<<<grid, block, 0, s>>>(reg_dev, m * sizeof(float), m, 1, 3.0f);
  CUDA_OK(cudaStreamSynchronize(s));
  wrong = 0;
  for (int i = 0; i < m; ++i) wrong += reg[i] != 3.0f * (1.0f + (i % 7));
  vt::check(wrong == 0 && raw[0] == -6.0f,
            "the CPU's new values reach the second launch, and its result the CPU (%d wrong)", wrong);

  // A memset and a copy through the device pointer, a copy from the host pointer.
  CUDA_OK(cudaMemsetAsync(reg_dev + m - 10, 0, 10 * sizeof(float), s));
  CUDA_OK(cudaStreamSynchronize(s));
  vt::check(reg[m - 11] == 3.0f * (1.0f + ((m - 11) % 7)) && reg[m - 10] == 0.0f && reg[m - 1] == 0.0f,
            "a memset of the device pointer reaches the CPU (%g %g)", reg[m - 10], reg[m - 1]);
  float* dev = nullptr;
  CUDA_OK(cudaMalloc(&dev, m * sizeof(float)));
  for (int i = 0; i < m; ++i) reg[i] = static_cast<float>(-i);
  CUDA_OK(cudaMemcpy(dev, reg, m * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(reg, reg_dev + 1, sizeof(float), cudaMemcpyDeviceToHost));  // reg[0] = reg[1]
  std::vector<float> back(m);
  CUDA_OK(cudaMemcpy(back.data(), dev, m * sizeof(float), cudaMemcpyDeviceToHost));
  vt::check(back[m - 1] == static_cast<float>(-(m - 1)) && back[5] == -5.0f && reg[0] == -1.0f,
            "copies read and write registered memory by either pointer (%g %g %g)", back[m - 1],
            back[5], reg[0]);
  CUDA_OK(cudaFree(dev));

  cudaPointerAttributes pa{};
  CUDA_OK(cudaPointerGetAttributes(&pa, reg));
  vt::check(pa.type == cudaMemoryTypeHost && pa.devicePointer == reg_dev && pa.hostPointer == reg,
            "registered mapped memory is host memory with a device pointer (type %d)",
            static_cast<int>(pa.type));
  vt::check(cudaHostRegister(reg + 8, 16, cudaHostRegisterMapped) != cudaSuccess,
            "registering a part of a registered range again is refused");
  cudaGetLastError();

  // A launch, then unregistering: what the kernel wrote is the program's.
  scale_rows<<<grid, block, 0, s>>>(reg_dev, m * sizeof(float), m, 1, -1.0f);
  CUDA_OK(cudaHostUnregister(reg));
  wrong = 0;
  for (int i = 1; i < m; ++i) wrong += reg[i] != static_cast<float>(i);
  vt::check(wrong == 0 && reg[0] == 1.0f, "unregistering hands the kernel's writes to the CPU (%d wrong)",
            wrong);
  reg[0] = 7.0f;  // the program's own memory again, writable
  CUDA_OK(cudaStreamDestroy(s));
  std::free(raw);

  // A range inside one page: no page of its own at all.
  auto* small = static_cast<int*>(std::malloc(64 * sizeof(int)));
  for (int i = 0; i < 64; ++i) small[i] = -1;
  CUDA_OK(cudaHostRegister(small + 3, 40 * sizeof(int), cudaHostRegisterMapped));
  int* small_dev = nullptr;
  CUDA_OK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&small_dev), small + 3, 0));
  fill_index<<<1, 64>>>(40, small_dev, 100);
  CUDA_OK(cudaDeviceSynchronize());
  vt::check(small[2] == -1 && small[3] == 100 && small[42] == 139 && small[43] == -1,
            "a kernel writes a registered range smaller than a page (%d %d %d %d)", small[2],
            small[3], small[42], small[43]);
  CUDA_OK(cudaHostUnregister(small + 3));
  std::free(small);
}

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
  // More dynamic shared memory than the kernel opted in to, or than any block can have, or past
  // 48 KiB without an opt-in: refused at the launch, as on a GPU, and nothing runs.
  int optin = 0;
  CUDA_OK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
  for (const int bytes : {96 * 1024, optin + 1024}) {
    fill_index<<<1, 32, bytes>>>(n, dev, 5);
    const cudaError_t e = cudaGetLastError();
    vt::check(e == cudaErrorInvalidValue, "a launch asking for %d bytes of shared memory (64 KiB opted in) is refused (%s)",
              bytes, vt::err_text(e));
  }
  scale_rows<<<1, 32, 50 * 1024>>>(nullptr, 0, 0, 0, 1.0f);
  const cudaError_t no_opt_in = cudaGetLastError();
  vt::check(no_opt_in == cudaErrorInvalidValue, "50 KiB without an opt-in is refused (%s)", vt::err_text(no_opt_in));
  CUDA_OK(cudaDeviceSynchronize());
  int first = -1;
  CUDA_OK(cudaMemcpy(&first, dev, sizeof first, cudaMemcpyDeviceToHost));
  vt::check(first == 3, "and none of them ran (the first element is %d, as the launch before left it)", first);
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
  {
    // 16 blocks of 1 MiB at once: twice CUDA's default heap, half this one.
    int* got = nullptr;
    CUDA_OK(cudaMalloc(&got, 16 * sizeof(int)));
    heap_blocks<<<1, 16>>>(1 << 20, got);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaDeviceSynchronize());
    int held[16] = {};
    CUDA_OK(cudaMemcpy(held, got, sizeof held, cudaMemcpyDeviceToHost));
    int whole = 0;
    for (int v : held) whole += v == 3;
    vt::check(whole == 16, "a 32 MiB device heap holds 16 blocks of 1 MiB at once (%d did)", whole);
    const cudaError_t again = cudaDeviceSetLimit(cudaLimitMallocHeapSize, 64u << 20);
    vt::check(again == cudaErrorInvalidValue, "the heap's size is fixed once a kernel used it (%s)",
              vt::err_text(again));
    cudaGetLastError();
    CUDA_OK(cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize));
    vt::check(heap == (32u << 20), "and stays 32 MiB (%zu)", heap);
    CUDA_OK(cudaFree(got));
  }
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
  // Pinned memory made without the flag is mapped too (unified addressing):
  // its device pointer works the same way.
  int* plain = nullptr;
  CUDA_OK(cudaMallocHost(&plain, n * sizeof(int)));
  for (int i = 0; i < n; ++i) plain[i] = -2;
  int* plain_dev = nullptr;
  CUDA_OK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&plain_dev), plain, 0));
  fill_index<<<(n + 255) / 256, 256>>>(n / 2, plain_dev, 7);
  CUDA_OK(cudaDeviceSynchronize());
  vt::check(plain[0] == 7 && plain[n / 2 - 1] == n / 2 - 1 + 7 && plain[n / 2] == -2,
            "a kernel writes cudaMallocHost memory through its device pointer (%d %d %d)", plain[0],
            plain[n / 2 - 1], plain[n / 2]);
  CUDA_OK(cudaFreeHost(plain));
  registered_mapped_memory();

  CUDA_OK(cudaFree(dev));
  CUDA_OK(cudaFree(dev2));
  CUDA_OK(cudaFreeHost(pinned));
  CUDA_OK(cudaStreamDestroy(high));
  CUDA_OK(cudaStreamDestroy(low));
  CUDA_OK(cudaEventDestroy(no_timing));
  CUDA_OK(cudaEventDestroy(blocking));
  vt::pass();
}
