// managed_cost [MAX_MIB] [ROUNDS]: what managed memory costs next to explicit
// copies of the same data, for buffers of 1 MiB up to MAX_MIB (default 64).
// One round of each, timed whole, with the same work:
//   explicit: the CPU writes every float of a host buffer, cudaMemcpy to the
//             device, a kernel adds 1 to every float, cudaMemcpy back, the
//             CPU reads every float;
//   managed:  the CPU writes every float of a managed buffer, the same
//             kernel, cudaDeviceSynchronize, the CPU reads every float;
//   sparse:   managed, but the CPU writes and reads one float per MiB: what
//             moves is what the CPU touches.
// The kinds take turns, ROUNDS (default 5) rounds each; the sums are checked.
// Prints explicit_ms_<MiB>, managed_ms_<MiB>, sparse_ms_<MiB> (medians).
#include <vector>

#include "bench_program.h"

__global__ void bump(float* p, size_t n) {
  size_t stride = static_cast<size_t>(blockDim.x) * gridDim.x;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) p[i] += 1.0f;
}

namespace {

constexpr int kBlocks = 256, kThreads = 256;

double ms_since(double t0) { return (bp::now_ns() - t0) / 1e6; }

void expect(double got, double want, const char* what) {
  if (got != want) {
    std::printf("error: %s: sum %.0f, expected %.0f\n", what, got, want);
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const long max_mib = bp::arg(argc, argv, 1, 64);
  const long rounds = bp::arg(argc, argv, 2, 5);
  for (long mib = 1; mib <= max_mib; mib *= 4) {
    const size_t n = static_cast<size_t>(mib) << 18;  // floats
    const size_t per_mib = size_t{1} << 18;
    std::vector<float> host(n);
    float* dev = nullptr;
    float* managed = nullptr;
    BP_OK(cudaMalloc(&dev, n * sizeof(float)));
    BP_OK(cudaMallocManaged(&managed, n * sizeof(float)));
    std::vector<double> explicit_ms, managed_ms, sparse_ms;
    for (long r = 0; r < rounds; ++r) {
      double t0 = bp::now_ns();
      for (size_t i = 0; i < n; ++i) host[i] = static_cast<float>(i & 1023);
      BP_OK(cudaMemcpy(dev, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
      bump<<<kBlocks, kThreads>>>(dev, n);
      BP_OK(cudaMemcpy(host.data(), dev, n * sizeof(float), cudaMemcpyDeviceToHost));
      double sum = 0;
      for (size_t i = 0; i < n; ++i) sum += host[i];
      explicit_ms.push_back(ms_since(t0));
      const double want = static_cast<double>(n / 1024) * (1023.0 * 1024 / 2 + 1024);
      expect(sum, want, "explicit");

      t0 = bp::now_ns();
      for (size_t i = 0; i < n; ++i) managed[i] = static_cast<float>(i & 1023);
      bump<<<kBlocks, kThreads>>>(managed, n);
      BP_OK(cudaDeviceSynchronize());
      sum = 0;
      for (size_t i = 0; i < n; ++i) sum += managed[i];
      managed_ms.push_back(ms_since(t0));
      expect(sum, want, "managed");

      t0 = bp::now_ns();
      for (size_t i = 0; i < n; i += per_mib) managed[i] = 5.0f;
      bump<<<kBlocks, kThreads>>>(managed, n);
      BP_OK(cudaDeviceSynchronize());
      sum = 0;
      for (size_t i = 0; i < n; i += per_mib) sum += managed[i];
      sparse_ms.push_back(ms_since(t0));
      expect(sum, 6.0 * static_cast<double>(mib), "sparse");
    }
    BP_OK(cudaFree(dev));
    BP_OK(cudaFree(managed));
    char key[64];
    for (auto [name, v] : {std::pair{"explicit_ms", &explicit_ms}, {"managed_ms", &managed_ms},
                           {"sparse_ms", &sparse_ms}}) {
      std::sort(v->begin(), v->end());
      std::snprintf(key, sizeof key, "%s_%ld", name, mib);
      bp::result(key, (*v)[v->size() / 2]);
    }
  }
  return 0;
}
