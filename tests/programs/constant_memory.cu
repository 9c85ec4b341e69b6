// constant_memory: module-scope device variables.
//  - coeffs, a __constant__ array set with cudaMemcpyToSymbol, read back with
//    cudaMemcpyFromSymbol, and used by apply_coeffs;
//  - cm::bias, a __device__ variable with an initializer (1.5f) that
//    apply_coeffs reads and cudaMemcpyFromSymbol sees before any write;
//  - table, a __device__ array filled through cudaGetSymbolAddress +
//    cudaMemcpy, read by lookup, rewritten in place by scale_table and read
//    back both ways.
// Device names (cubin symbol table): coeffs, _ZN2cm4biasE, table.
#include <vector>

#include "common.h"

__constant__ float coeffs[16];
namespace cm {
__device__ float bias = 1.5f;
}
__device__ int table[256];

__global__ void apply_coeffs(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = coeffs[i % 16] * x[i] + cm::bias;
}

__global__ void lookup(const int* idx, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = table[idx[i] & 255];
}

__global__ void scale_table(int factor) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 256) table[i] *= factor;
}

int main() {
  vt::set_name("constant_memory");

  // __device__ initializer, seen from the host.
  float bias = 0;
  CUDA_OK(cudaMemcpyFromSymbol(&bias, cm::bias, sizeof bias));
  vt::check(bias == 1.5f, "cm::bias initialized to %g (expected 1.5)", bias);

  // __constant__ round trip, including an offset write.
  float c[16];
  for (int k = 0; k < 16; ++k) c[k] = static_cast<float>(k + 1);
  CUDA_OK(cudaMemcpyToSymbol(coeffs, c, sizeof c));
  const float tail[4] = {-1.0f, -2.0f, -3.0f, -4.0f};
  CUDA_OK(cudaMemcpyToSymbol(coeffs, tail, sizeof tail, 12 * sizeof(float)));
  for (int k = 12; k < 16; ++k) c[k] = tail[k - 12];
  float back[16] = {};
  CUDA_OK(cudaMemcpyFromSymbol(back, coeffs, sizeof back));
  bool same = true;
  for (int k = 0; k < 16; ++k) same = same && back[k] == c[k];
  vt::check(same, "coeffs: cudaMemcpyToSymbol (twice, one at offset 48) then cudaMemcpyFromSymbol");
  float two[2] = {};
  CUDA_OK(cudaMemcpyFromSymbol(two, coeffs, sizeof two, 13 * sizeof(float)));
  vt::check(two[0] == -2.0f && two[1] == -3.0f, "cudaMemcpyFromSymbol at offset 52: %g %g", two[0],
            two[1]);

  // Kernel reading both.
  const int n = 10000;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) x[i] = static_cast<float>(i % 300);
  float *dx, *dy;
  CUDA_OK(cudaMalloc(&dx, n * sizeof(float)));
  CUDA_OK(cudaMalloc(&dy, n * sizeof(float)));
  CUDA_OK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  apply_coeffs<<<(n + 127) / 128, 128>>>(dx, dy, n);
  LAUNCH_OK();
  CUDA_OK(cudaMemcpy(y.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i)
    if (y[i] != c[i % 16] * x[i] + 1.5f)
      vt::fail("apply_coeffs: y[%d] = %g, expected %g", i, y[i], c[i % 16] * x[i] + 1.5f);
  vt::check(true, "apply_coeffs: y = coeffs[i %% 16] * x + bias for %d elements", n);

  // The initializer is device state: a new value written through the symbol
  // is what the next launch sees.
  const float new_bias = -0.25f;
  CUDA_OK(cudaMemcpyToSymbol(cm::bias, &new_bias, sizeof new_bias));
  apply_coeffs<<<(n + 127) / 128, 128>>>(dx, dy, n);
  LAUNCH_OK();
  CUDA_OK(cudaMemcpy(y.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i)
    if (y[i] != c[i % 16] * x[i] + new_bias)
      vt::fail("apply_coeffs after bias update: y[%d] = %g, expected %g", i, y[i],
               c[i % 16] * x[i] + new_bias);
  vt::check(true, "apply_coeffs sees cm::bias = %g after cudaMemcpyToSymbol", new_bias);

  // cudaGetSymbolAddress + plain cudaMemcpy.
  int* dtable = nullptr;
  CUDA_OK(cudaGetSymbolAddress(reinterpret_cast<void**>(&dtable), table));
  vt::check(dtable != nullptr, "cudaGetSymbolAddress(table) = %p", static_cast<void*>(dtable));
  int t[256];
  for (int k = 0; k < 256; ++k) t[k] = 1000 + 7 * k;
  CUDA_OK(cudaMemcpy(dtable, t, sizeof t, cudaMemcpyHostToDevice));
  const int m = 1000;
  std::vector<int> idx(m), got(m);
  for (int i = 0; i < m; ++i) idx[i] = (i * 37) % 512;  // & 255 inside the kernel
  int *didx, *dgot;
  CUDA_OK(cudaMalloc(&didx, m * sizeof(int)));
  CUDA_OK(cudaMalloc(&dgot, m * sizeof(int)));
  CUDA_OK(cudaMemcpy(didx, idx.data(), m * sizeof(int), cudaMemcpyHostToDevice));
  lookup<<<(m + 255) / 256, 256>>>(didx, dgot, m);
  LAUNCH_OK();
  CUDA_OK(cudaMemcpy(got.data(), dgot, m * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < m; ++i)
    if (got[i] != t[idx[i] & 255])
      vt::fail("lookup: out[%d] = %d, expected %d", i, got[i], t[idx[i] & 255]);
  vt::check(true, "lookup reads table written through its symbol address (%d lookups)", m);

  // A kernel writing the __device__ array; read back through both paths.
  scale_table<<<2, 128>>>(3);
  LAUNCH_OK();
  CUDA_OK(cudaDeviceSynchronize());
  int via_symbol[256], via_address[256];
  CUDA_OK(cudaMemcpyFromSymbol(via_symbol, table, sizeof via_symbol));
  CUDA_OK(cudaMemcpy(via_address, dtable, sizeof via_address, cudaMemcpyDeviceToHost));
  for (int k = 0; k < 256; ++k)
    if (via_symbol[k] != 3 * t[k] || via_address[k] != 3 * t[k])
      vt::fail("scale_table: table[%d] = %d / %d, expected %d", k, via_symbol[k], via_address[k],
               3 * t[k]);
  vt::check(true, "scale_table's writes seen by cudaMemcpyFromSymbol and cudaMemcpy");

  CUDA_OK(cudaFree(dx));
  CUDA_OK(cudaFree(dy));
  CUDA_OK(cudaFree(didx));
  CUDA_OK(cudaFree(dgot));
  vt::pass();
}
