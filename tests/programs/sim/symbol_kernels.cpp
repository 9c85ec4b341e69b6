// CPU implementations of constant_memory.cu's kernels, which use module-scope
// device variables. They are reached through launch->symbol_address by their
// device names, as the cubin's symbol table has them:
//   __constant__ float coeffs[16]               -> "coeffs"
//   namespace cm { __device__ float bias = 1.5f; } -> "_ZN2cm4biasE"
//   __device__ int table[256]                   -> "table"
#include <cmath>

#include "kernel_support.h"

using namespace vgpu_test_kernels;

namespace {
constexpr const char* kCoeffs = "coeffs";
constexpr const char* kBias = "_ZN2cm4biasE";
constexpr const char* kTable = "table";
}  // namespace

// __global__ void apply_coeffs(const float* x, float* y, int n) {
//   int i = blockIdx.x * blockDim.x + threadIdx.x;
//   if (i < n) y[i] = coeffs[i % 16] * x[i] + cm::bias;
// }
VGPU_SIM_KERNEL(_Z12apply_coeffsPKfPfi) {
  const float* x;
  float* y;
  int n;
  if (!read_params(launch, x, y, n)) return kBadParams;
  const float* coeffs = symbol<const float>(launch, kCoeffs);
  const float* bias = symbol<const float>(launch, kBias);
  if (coeffs == nullptr || bias == nullptr) return kUnknownSymbol;
  for_each_thread(launch, [&](const Thread& t) {
    int i = t.blockIdx.x * t.blockDim.x + t.threadIdx.x;
    if (i < n) y[i] = std::fma(coeffs[i % 16], x[i], *bias);
  });
  return 0;
}

// __global__ void lookup(const int* idx, int* out, int n) {
//   int i = blockIdx.x * blockDim.x + threadIdx.x;
//   if (i < n) out[i] = table[idx[i] & 255];
// }
VGPU_SIM_KERNEL(_Z6lookupPKiPii) {
  const int* idx;
  int* out;
  int n;
  if (!read_params(launch, idx, out, n)) return kBadParams;
  const int* table = symbol<const int>(launch, kTable);
  if (table == nullptr) return kUnknownSymbol;
  for_each_thread(launch, [&](const Thread& t) {
    int i = t.blockIdx.x * t.blockDim.x + t.threadIdx.x;
    if (i < n) out[i] = table[idx[i] & 255];
  });
  return 0;
}

// __global__ void scale_table(int factor) {
//   int i = blockIdx.x * blockDim.x + threadIdx.x;
//   if (i < 256) table[i] *= factor;
// }
VGPU_SIM_KERNEL(_Z11scale_tablei) {
  int factor;
  if (!read_params(launch, factor)) return kBadParams;
  int* table = symbol<int>(launch, kTable);
  if (table == nullptr) return kUnknownSymbol;
  for_each_thread(launch, [&](const Thread& t) {
    int i = t.blockIdx.x * t.blockDim.x + t.threadIdx.x;
    // The GPU wraps on overflow; signed overflow is undefined in C++.
    if (i < 256) table[i] = static_cast<int>(static_cast<unsigned>(table[i]) * static_cast<unsigned>(factor));
  });
  return 0;
}
