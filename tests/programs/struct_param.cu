// struct_param: kernels taking structs by value (internal padding, arrays, a
// 528-byte struct) between scalar parameters, writing back what they
// received; the host checks every field.
#include "common.h"
#include "struct_param_types.h"

using vt_struct::Big;
using vt_struct::Padded;
using vt_struct::WithArray;

// Parameter buffer: tag@0, p@8 (after 7 bytes of padding), after@40, out@48,
// extras@56, n@64: 68 bytes.
__global__ void take_padded(char tag, Padded p, int after, Padded* out, int* extras, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i].c = static_cast<char>(p.c + i);
    out[i].d = p.d * (i + 1);
    out[i].i = p.i - i;
    out[i].v.x = p.v.x + i;
    out[i].v.y = p.v.y;
    out[i].v.z = p.v.z;
    extras[2 * i] = tag;
    extras[2 * i + 1] = after;
  }
}

// w@0 (28 bytes), values_out@32, misc_out@40: 48 bytes.
__global__ void take_array(WithArray w, float* values_out, int* misc_out) {
  int t = threadIdx.x;
  if (t < 5) values_out[t] = w.values[t];
  if (t < 3) misc_out[1 + t] = w.bytes[t];
  if (t == 0) misc_out[0] = w.count;
}

// offset@0, b@8 (528 bytes), out@536: 544 bytes.
__global__ void scale_big(int offset, Big b, double* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < b.count) out[i] = (b.values[i] + offset) * b.scale;
}

int main() {
  vt::set_name("struct_param");

  // --- Padded, between a char and an int ---
  const int n = 6;  // 2 blocks of 4 threads: the last 2 threads do nothing
  Padded p{};
  p.c = 'A';
  p.d = 3.25;
  p.i = -123456;
  p.v = {1.5f, -2.0f, 1024.0f};
  const char tag = 'z';
  const int after = 0x5eed;
  Padded* dout;
  int* dextras;
  CUDA_OK(cudaMalloc(&dout, (n + 2) * sizeof(Padded)));
  CUDA_OK(cudaMalloc(&dextras, 2 * (n + 2) * sizeof(int)));
  CUDA_OK(cudaMemset(dout, 0, (n + 2) * sizeof(Padded)));
  CUDA_OK(cudaMemset(dextras, 0, 2 * (n + 2) * sizeof(int)));
  take_padded<<<2, 4>>>(tag, p, after, dout, dextras, n);
  LAUNCH_OK();
  CUDA_OK(cudaDeviceSynchronize());
  Padded out[n + 2];
  int extras[2 * (n + 2)];
  CUDA_OK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(extras, dextras, sizeof extras, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    const Padded& o = out[i];
    if (o.c != static_cast<char>(p.c + i) || o.d != p.d * (i + 1) || o.i != p.i - i ||
        o.v.x != p.v.x + i || o.v.y != p.v.y || o.v.z != p.v.z)
      vt::fail("take_padded thread %d got c=%d d=%g i=%d v={%g,%g,%g}", i, o.c, o.d, o.i, o.v.x,
               o.v.y, o.v.z);
    if (extras[2 * i] != tag || extras[2 * i + 1] != after)
      vt::fail("take_padded thread %d got tag=%d after=%#x (expected %d, %#x)", i, extras[2 * i],
               extras[2 * i + 1], tag, after);
  }
  vt::check(out[n].c == 0 && out[n + 1].i == 0 && extras[2 * n] == 0,
            "take_padded: threads past n wrote nothing");
  vt::check(true, "take_padded(char, Padded{char,double,int,Vec3}, int, ...): all fields intact");

  // --- WithArray ---
  WithArray w{};
  w.count = -7;
  for (int k = 0; k < 5; ++k) w.values[k] = 0.25f * (k + 1) - 10.0f;
  w.bytes[0] = 0;
  w.bytes[1] = 0x7f;
  w.bytes[2] = 0xff;
  float* dvalues;
  int* dmisc;
  CUDA_OK(cudaMalloc(&dvalues, 5 * sizeof(float)));
  CUDA_OK(cudaMalloc(&dmisc, 4 * sizeof(int)));
  take_array<<<1, 8>>>(w, dvalues, dmisc);
  LAUNCH_OK();
  CUDA_OK(cudaDeviceSynchronize());
  float values[5];
  int misc[4];
  CUDA_OK(cudaMemcpy(values, dvalues, sizeof values, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(misc, dmisc, sizeof misc, cudaMemcpyDeviceToHost));
  for (int k = 0; k < 5; ++k)
    if (values[k] != w.values[k]) vt::fail("take_array: values[%d] = %g, expected %g", k, values[k], w.values[k]);
  vt::check(misc[0] == -7 && misc[1] == 0 && misc[2] == 0x7f && misc[3] == 0xff,
            "take_array(WithArray{short, float[5], uchar[3]}): count %d, bytes %d %d %d", misc[0],
            misc[1], misc[2], misc[3]);

  // --- Big ---
  Big b{};
  b.count = 100;  // 4 blocks of 32 threads: 28 idle
  b.scale = 0.5;
  for (int k = 0; k < 128; ++k) b.values[k] = k * k - 50;
  const int offset = 3;
  double* dbig;
  CUDA_OK(cudaMalloc(&dbig, 128 * sizeof(double)));
  CUDA_OK(cudaMemset(dbig, 0, 128 * sizeof(double)));
  scale_big<<<4, 32>>>(offset, b, dbig);
  LAUNCH_OK();
  CUDA_OK(cudaDeviceSynchronize());
  double big_out[128];
  CUDA_OK(cudaMemcpy(big_out, dbig, sizeof big_out, cudaMemcpyDeviceToHost));
  for (int k = 0; k < 128; ++k) {
    double expected = k < b.count ? (b.values[k] + offset) * b.scale : 0.0;
    if (big_out[k] != expected) vt::fail("scale_big: out[%d] = %g, expected %g", k, big_out[k], expected);
  }
  vt::check(true, "scale_big(int, Big{int[128], int, double} (528 bytes), ...): %d values correct",
            b.count);

  CUDA_OK(cudaFree(dout));
  CUDA_OK(cudaFree(dextras));
  CUDA_OK(cudaFree(dvalues));
  CUDA_OK(cudaFree(dmisc));
  CUDA_OK(cudaFree(dbig));
  vt::pass();
}
