// streams_events: two streams working on pinned host buffers, joined by an
// event.
//
//   s1: H2D a; scale_add(a, 2, +1); record a_done;            D2H a; record end1
//   s2: H2D b; scale_add(b, 3, -1); wait a_done; add_into(b += a); D2H b; record end2
//
// Checks the results (b's depend on s1's kernel, so on cudaStreamWaitEvent),
// that cudaStreamQuery / cudaEventQuery report cudaSuccess once the work is
// done (cudaErrorNotReady before that), and that the timed events measure a
// positive time.
#include <chrono>
#include <cstdint>
#include <thread>

#include "common.h"

__global__ void scale_add(float* data, float scale, float offset, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] * scale + offset;
}

__global__ void add_into(const float* src, float* dst, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] += src[i];
}

// Polls a query function until it reports cudaSuccess (cudaErrorNotReady
// means "not yet"; anything else is a failure).
template <typename Query>
static void wait_until_done(const char* what, Query query) {
  auto start = std::chrono::steady_clock::now();
  int not_ready = 0;
  for (;;) {
    cudaError_t e = query();
    if (e == cudaSuccess) break;
    if (e != cudaErrorNotReady) vt::fail("%s returned %s", what, vt::err_text(e));
    ++not_ready;
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(60))
      vt::fail("%s still cudaErrorNotReady after 60 s", what);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  vt::check(true, "%s reached cudaSuccess (after %d cudaErrorNotReady)", what, not_ready);
}

int main() {
  vt::set_name("streams_events");
  const int n = 1 << 22;  // 16 MiB per buffer: copies take measurable time
  const size_t bytes = n * sizeof(float);
  const int block = 256, grid = (n + block - 1) / block;

  float *ha = nullptr, *hb = nullptr;
  CUDA_OK(cudaMallocHost(&ha, bytes));
  CUDA_OK(cudaHostAlloc(&hb, bytes, cudaHostAllocDefault));
  for (int i = 0; i < n; ++i) {
    ha[i] = static_cast<float>(i % 1024);
    hb[i] = static_cast<float>(i % 999);
  }
  float *da = nullptr, *db = nullptr;
  unsigned char* dflag = nullptr;
  CUDA_OK(cudaMalloc(&da, bytes));
  CUDA_OK(cudaMalloc(&db, bytes));
  CUDA_OK(cudaMalloc(&dflag, 256));
  unsigned char* hflag = nullptr;
  CUDA_OK(cudaMallocHost(&hflag, 256));
  for (int i = 0; i < 256; ++i) hflag[i] = 0;

  cudaStream_t s1, s2;
  CUDA_OK(cudaStreamCreate(&s1));
  CUDA_OK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t start1, end1, start2, end2, a_done;
  CUDA_OK(cudaEventCreate(&start1));
  CUDA_OK(cudaEventCreate(&end1));
  CUDA_OK(cudaEventCreateWithFlags(&start2, cudaEventDefault));
  CUDA_OK(cudaEventCreateWithFlags(&end2, cudaEventBlockingSync));
  CUDA_OK(cudaEventCreateWithFlags(&a_done, cudaEventDisableTiming));

  // Stream 1
  CUDA_OK(cudaEventRecord(start1, s1));
  CUDA_OK(cudaMemcpyAsync(da, ha, bytes, cudaMemcpyHostToDevice, s1));
  scale_add<<<grid, block, 0, s1>>>(da, 2.0f, 1.0f, n);
  LAUNCH_OK();
  CUDA_OK(cudaEventRecord(a_done, s1));
  CUDA_OK(cudaMemsetAsync(dflag, 0xab, 256, s1));

  // Stream 2: its second kernel reads stream 1's result.
  CUDA_OK(cudaEventRecord(start2, s2));
  CUDA_OK(cudaMemcpyAsync(db, hb, bytes, cudaMemcpyHostToDevice, s2));
  scale_add<<<grid, block, 0, s2>>>(db, 3.0f, -1.0f, n);
  LAUNCH_OK();
  CUDA_OK(cudaStreamWaitEvent(s2, a_done, 0));
  add_into<<<grid, block, 0, s2>>>(da, db, n);
  LAUNCH_OK();
  CUDA_OK(cudaMemcpyAsync(hb, db, bytes, cudaMemcpyDeviceToHost, s2));
  CUDA_OK(cudaEventRecord(end2, s2));

  // Stream 1 copies back after its event (the D2H may overlap stream 2).
  CUDA_OK(cudaMemcpyAsync(hflag, dflag, 256, cudaMemcpyDeviceToHost, s1));
  CUDA_OK(cudaMemcpyAsync(ha, da, bytes, cudaMemcpyDeviceToHost, s1));
  CUDA_OK(cudaEventRecord(end1, s1));

  wait_until_done("cudaStreamQuery(s2)", [&] { return cudaStreamQuery(s2); });
  wait_until_done("cudaEventQuery(end1)", [&] { return cudaEventQuery(end1); });
  CUDA_OK(cudaEventSynchronize(end1));
  CUDA_OK(cudaEventSynchronize(end2));
  CUDA_OK(cudaStreamSynchronize(s1));
  CUDA_OK(cudaStreamSynchronize(s2));
  vt::check(cudaStreamQuery(s1) == cudaSuccess, "cudaStreamQuery(s1) is cudaSuccess after sync");
  vt::check(cudaEventQuery(end2) == cudaSuccess, "cudaEventQuery(end2) is cudaSuccess after sync");

  float ms1 = 0, ms2 = 0;
  CUDA_OK(cudaEventElapsedTime(&ms1, start1, end1));
  CUDA_OK(cudaEventElapsedTime(&ms2, start2, end2));
  vt::check(ms1 > 0.0f, "stream 1 took %.3f ms between its events (> 0)", ms1);
  vt::check(ms2 > 0.0f, "stream 2 took %.3f ms between its events (> 0)", ms2);

  for (int i = 0; i < n; ++i) {
    float a = static_cast<float>(i % 1024) * 2.0f + 1.0f;
    float b = static_cast<float>(i % 999) * 3.0f - 1.0f + a;
    if (ha[i] != a) vt::fail("stream 1: a[%d] = %g, expected %g", i, ha[i], a);
    if (hb[i] != b)
      vt::fail("stream 2: b[%d] = %g, expected %g (did it wait for stream 1's event?)", i, hb[i], b);
  }
  vt::check(true, "stream 1 results correct (%d elements)", n);
  vt::check(true, "stream 2 results correct, including stream 1's data after the wait");
  bool flag_ok = true;
  for (int i = 0; i < 256; ++i) flag_ok = flag_ok && hflag[i] == 0xab;
  vt::check(flag_ok, "cudaMemsetAsync on stream 1 wrote 256 bytes of 0xab");

  CUDA_OK(cudaEventDestroy(start1));
  CUDA_OK(cudaEventDestroy(end1));
  CUDA_OK(cudaEventDestroy(start2));
  CUDA_OK(cudaEventDestroy(end2));
  CUDA_OK(cudaEventDestroy(a_done));
  CUDA_OK(cudaStreamDestroy(s1));
  CUDA_OK(cudaStreamDestroy(s2));
  CUDA_OK(cudaFree(da));
  CUDA_OK(cudaFree(db));
  CUDA_OK(cudaFree(dflag));
  CUDA_OK(cudaFreeHost(ha));
  CUDA_OK(cudaFreeHost(hb));
  CUDA_OK(cudaFreeHost(hflag));
  CUDA_OK(cudaGetLastError());
  vt::pass();
}
