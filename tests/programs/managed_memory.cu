// managed_memory: cudaMallocManaged used the ways course material uses it,
// results checked on the CPU:
//
//   1. NVIDIA's "An Even Easier Introduction to CUDA": x and y written by the
//      CPU, a grid-stride kernel adds them, the CPU checks y after a
//      cudaDeviceSynchronize;
//   2. the CPU changes a few elements between launches: the kernel sees
//      exactly those changes (and keeps the device's own results elsewhere);
//   3. a kernel on a stream, waited for with cudaStreamSynchronize and with
//      an event;
//   4. cudaMemcpy and cudaMemset on managed memory, either side, any kind;
//   5. prefetch (to the device and back to the CPU), advice and the range
//      attributes reading it back, stream attachment;
//   6. pointer attributes and the device's managed-memory attributes;
//   7. a larger allocation touched in a few places only, freed, and a new one;
//   8. __managed__ variables: their initial value, CPU writes before a
//      launch, the kernel's writes after it.
#include <cstdint>
#include <cstring>
#include <vector>

#include "common.h"

__global__ void add(int n, const float* x, float* y) {
  int index = blockIdx.x * blockDim.x + threadIdx.x;
  int stride = blockDim.x * gridDim.x;
  for (int i = index; i < n; i += stride) y[i] = x[i] + y[i];
}

__global__ void fill_index(int n, int* out, int offset) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = i + offset;
}

__managed__ int counter = 5;
__managed__ float table[1000];

__global__ void bump_managed(int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) table[i] += 1.0f;
  if (i == 0) counter += 10;
}

namespace {

constexpr int kBlock = 256;
int grid_for(int n) { return (n + kBlock - 1) / kBlock; }

void expect_all(const float* y, int n, float want, const char* what) {
  for (int i = 0; i < n; ++i) {
    if (y[i] != want) vt::fail("%s: y[%d] is %g, expected %g", what, i, y[i], want);
  }
  vt::check(true, "%s: %d elements are %g", what, n, want);
}

}  // namespace

int main() {
  vt::set_name("managed_memory");

  int managed = 0, concurrent = 0;
  CUDA_OK(cudaDeviceGetAttribute(&managed, cudaDevAttrManagedMemory, 0));
  CUDA_OK(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, 0));
  vt::check(managed == 1, "the device reports managed memory");
  std::printf("concurrentManagedAccess = %d\n", concurrent);

  // 1. The tutorial.
  const int n = 1 << 20;
  float *x = nullptr, *y = nullptr;
  CUDA_OK(cudaMallocManaged(&x, n * sizeof(float)));
  CUDA_OK(cudaMallocManaged(&y, n * sizeof(float)));
  for (int i = 0; i < n; i++) {
    x[i] = 1.0f;
    y[i] = 2.0f;
  }
  add<<<(n + kBlock - 1) / kBlock, kBlock>>>(n, x, y);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  expect_all(y, n, 3.0f, "tutorial: x + y after cudaDeviceSynchronize");
  add<<<4, kBlock>>>(n, x, y);  // grid-stride: few blocks cover all of it
  CUDA_OK(cudaDeviceSynchronize());
  expect_all(y, n, 4.0f, "a second launch with 4 blocks");

  // 2. The CPU changes a few elements: only those differ after the next launch.
  x[0] = 10.0f;
  x[n / 2] = 20.0f;
  x[n - 1] = 30.0f;
  add<<<grid_for(n), kBlock>>>(n, x, y);
  CUDA_OK(cudaDeviceSynchronize());
  vt::check(y[0] == 14.0f && y[n / 2] == 24.0f && y[n - 1] == 34.0f && y[1] == 5.0f &&
                y[n - 2] == 5.0f,
            "CPU writes between launches reach the kernel (y[0]=%g y[n/2]=%g y[n-1]=%g y[1]=%g)",
            y[0], y[n / 2], y[n - 1], y[1]);

  // 3. A stream, then an event.
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  int* idx = nullptr;
  const int m = 5000;
  CUDA_OK(cudaMallocManaged(&idx, m * sizeof(int)));
  fill_index<<<grid_for(m), kBlock, 0, stream>>>(m, idx, 7);
  CUDA_OK(cudaStreamSynchronize(stream));
  bool ok = true;
  for (int i = 0; i < m; ++i) ok &= idx[i] == i + 7;
  vt::check(ok, "kernel on a stream, cudaStreamSynchronize: %d elements", m);
  cudaEvent_t done;
  CUDA_OK(cudaEventCreate(&done));
  fill_index<<<grid_for(m), kBlock, 0, stream>>>(m, idx, 100);
  CUDA_OK(cudaEventRecord(done, stream));
  CUDA_OK(cudaEventSynchronize(done));
  ok = true;
  for (int i = 0; i < m; ++i) ok &= idx[i] == i + 100;
  vt::check(ok, "kernel on a stream, cudaEventSynchronize: %d elements", m);

  // 4. Copies and memsets, managed on either side.
  std::vector<int> host(m);
  CUDA_OK(cudaMemcpy(host.data(), idx, m * sizeof(int), cudaMemcpyDefault));
  vt::check(host[0] == 100 && host[m - 1] == m - 1 + 100, "cudaMemcpy managed -> host (Default)");
  for (int i = 0; i < m; ++i) host[i] = -i;
  CUDA_OK(cudaMemcpy(idx, host.data(), m * sizeof(int), cudaMemcpyHostToDevice));
  vt::check(idx[0] == 0 && idx[m - 1] == -(m - 1), "cudaMemcpy host -> managed (HostToDevice), read on the CPU");
  idx[1] = 4242;  // dirty on the CPU, then copied by the device
  int* dev = nullptr;
  CUDA_OK(cudaMalloc(&dev, m * sizeof(int)));
  CUDA_OK(cudaMemcpy(dev, idx, m * sizeof(int), cudaMemcpyDeviceToDevice));
  int back[2] = {};
  CUDA_OK(cudaMemcpy(back, dev, sizeof back, cudaMemcpyDeviceToHost));
  vt::check(back[1] == 4242, "a CPU write reaches a device-to-device copy from managed memory");
  CUDA_OK(cudaMemset(idx, 0, m * sizeof(int)));
  CUDA_OK(cudaDeviceSynchronize());
  ok = true;
  for (int i = 0; i < m; ++i) ok &= idx[i] == 0;
  vt::check(ok, "cudaMemset on managed memory, read on the CPU");
  CUDA_OK(cudaMemcpyAsync(idx, dev, m * sizeof(int), cudaMemcpyDefault, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  vt::check(idx[1] == 4242 && idx[2] == -2, "cudaMemcpyAsync device -> managed, read after the stream");

  // 5. Prefetch, advice, attachment.
  int device = 0;
  CUDA_OK(cudaGetDevice(&device));
  cudaMemLocation on_device{cudaMemLocationTypeDevice, device};
  cudaMemLocation on_host{cudaMemLocationTypeHost, 0};
  CUDA_OK(cudaMemAdvise(y, n * sizeof(float), cudaMemAdviseSetReadMostly, on_device));
  int read_mostly = 0;
  CUDA_OK(cudaMemRangeGetAttribute(&read_mostly, sizeof read_mostly, cudaMemRangeAttributeReadMostly,
                                   y, n * sizeof(float)));
  vt::check(read_mostly == 1, "cudaMemAdvise(SetReadMostly) reads back");
  CUDA_OK(cudaMemAdvise(y, n * sizeof(float), cudaMemAdviseSetPreferredLocation, on_device));
  int preferred = -5;
  CUDA_OK(cudaMemRangeGetAttribute(&preferred, sizeof preferred,
                                   cudaMemRangeAttributePreferredLocation, y, n * sizeof(float)));
  vt::check(preferred == device, "preferred location reads back (%d)", preferred);
  y[5] = 100.0f;
  CUDA_OK(cudaMemPrefetchAsync(y, n * sizeof(float), on_device, 0, stream));
  add<<<grid_for(n), kBlock, 0, stream>>>(n, x, y);
  CUDA_OK(cudaMemPrefetchAsync(y, n * sizeof(float), on_host, 0, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  vt::check(y[5] == 101.0f && y[6] == 6.0f, "prefetch to the device, launch, prefetch back (y[5]=%g)", y[5]);
  int last = -5;
  CUDA_OK(cudaMemRangeGetAttribute(&last, sizeof last, cudaMemRangeAttributeLastPrefetchLocation,
                                   y, n * sizeof(float)));
  vt::check(last == cudaCpuDeviceId, "last prefetch location is the CPU (%d)", last);
  CUDA_OK(cudaStreamAttachMemAsync(stream, idx, 0, cudaMemAttachSingle));
  CUDA_OK(cudaStreamSynchronize(stream));
  vt::check(true, "cudaStreamAttachMemAsync accepted");
  vt::check(cudaMemAdvise(host.data(), 64, cudaMemAdviseSetReadMostly, on_device) != cudaSuccess,
            "advice on memory that is not managed is refused");
  cudaGetLastError();

  // 6. Pointer attributes.
  cudaPointerAttributes attr{};
  CUDA_OK(cudaPointerGetAttributes(&attr, x + 10));
  vt::check(attr.type == cudaMemoryTypeManaged, "cudaPointerGetAttributes: managed (type %d)",
            static_cast<int>(attr.type));
  vt::check(attr.devicePointer == x + 10 && attr.hostPointer == x + 10,
            "one pointer for the device and the CPU");

  // 7. Larger, touched sparsely; freed; a new allocation works the same.
  const size_t big_n = 16u << 20;  // 64 MiB of ints
  int* big = nullptr;
  CUDA_OK(cudaMallocManaged(&big, big_n * sizeof(int)));
  vt::check(big[0] == 0 && big[big_n - 1] == 0, "fresh managed memory reads as zeros");
  big[3] = 3;
  big[big_n - 3] = 9;
  fill_index<<<grid_for(1000), kBlock>>>(1000, big + big_n / 2, 5);
  CUDA_OK(cudaDeviceSynchronize());
  vt::check(big[3] == 3 && big[big_n - 3] == 9 && big[big_n / 2] == 5 && big[big_n / 2 + 999] == 1004,
            "sparse CPU writes and a kernel's writes both kept");
  CUDA_OK(cudaFree(big));
  CUDA_OK(cudaFree(idx));
  CUDA_OK(cudaFree(dev));
  float* again = nullptr;
  CUDA_OK(cudaMallocManaged(&again, 1000 * sizeof(float)));
  for (int i = 0; i < 1000; ++i) again[i] = 1.5f;
  add<<<grid_for(1000), kBlock>>>(1000, again, again);
  CUDA_OK(cudaDeviceSynchronize());
  vt::check(again[999] == 3.0f, "a new allocation after frees (again[999]=%g)", again[999]);
  CUDA_OK(cudaFree(again));

  // 8. __managed__ variables.
  vt::check(counter == 5, "a __managed__ variable starts at its initial value (%d)", counter);
  counter += 1;
  for (int i = 0; i < 1000; ++i) table[i] = static_cast<float>(i);
  bump_managed<<<grid_for(1000), kBlock>>>(1000);
  CUDA_OK(cudaDeviceSynchronize());
  vt::check(counter == 16 && table[0] == 1.0f && table[999] == 1000.0f,
            "__managed__ variables: CPU writes reach the kernel, its writes reach the CPU "
            "(counter %d, table[999] %g)", counter, table[999]);
  CUDA_OK(cudaFree(x));
  CUDA_OK(cudaFree(y));
  CUDA_OK(cudaStreamDestroy(stream));
  CUDA_OK(cudaEventDestroy(done));
  vt::pass();
}
