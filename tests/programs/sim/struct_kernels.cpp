// CPU implementations of struct_param.cu's kernels: structs passed by value.
// The structs come from the same header the .cu uses (struct_param_types.h),
// so both sides agree on their layout.
#include "kernel_support.h"
#include "struct_param_types.h"

using namespace vgpu_test_kernels;
using vt_struct::Big;
using vt_struct::Padded;
using vt_struct::WithArray;

// __global__ void take_padded(char tag, Padded p, int after, Padded* out, int* extras, int n) {
//   int i = blockIdx.x * blockDim.x + threadIdx.x;
//   if (i < n) {
//     out[i].c = static_cast<char>(p.c + i);
//     out[i].d = p.d * (i + 1);
//     out[i].i = p.i - i;
//     out[i].v.x = p.v.x + i;
//     out[i].v.y = p.v.y;
//     out[i].v.z = p.v.z;
//     extras[2 * i] = tag;
//     extras[2 * i + 1] = after;
//   }
// }
// Buffer: tag@0, p@8, after@40, out@48, extras@56, n@64 (68 bytes).
VGPU_SIM_KERNEL(_Z11take_paddedcN9vt_struct6PaddedEiPS0_Pii) {
  char tag;
  Padded p;
  int after;
  Padded* out;
  int* extras;
  int n;
  if (!read_params(launch, tag, p, after, out, extras, n)) return kBadParams;
  for_each_thread(launch, [&](const Thread& t) {
    int i = t.blockIdx.x * t.blockDim.x + t.threadIdx.x;
    if (i < n) {
      out[i].c = static_cast<char>(p.c + i);
      out[i].d = p.d * (i + 1);
      out[i].i = p.i - i;
      out[i].v.x = p.v.x + static_cast<float>(i);
      out[i].v.y = p.v.y;
      out[i].v.z = p.v.z;
      extras[2 * i] = tag;
      extras[2 * i + 1] = after;
    }
  });
  return 0;
}

// __global__ void take_array(WithArray w, float* values_out, int* misc_out) {
//   int t = threadIdx.x;
//   if (t < 5) values_out[t] = w.values[t];
//   if (t < 3) misc_out[1 + t] = w.bytes[t];
//   if (t == 0) misc_out[0] = w.count;
// }
// Buffer: w@0 (28 bytes), values_out@32, misc_out@40 (48 bytes).
VGPU_SIM_KERNEL(_Z10take_arrayN9vt_struct9WithArrayEPfPi) {
  WithArray w;
  float* values_out;
  int* misc_out;
  if (!read_params(launch, w, values_out, misc_out)) return kBadParams;
  for_each_thread(launch, [&](const Thread& th) {
    int t = th.threadIdx.x;
    if (t < 5) values_out[t] = w.values[t];
    if (t < 3) misc_out[1 + t] = w.bytes[t];
    if (t == 0) misc_out[0] = w.count;
  });
  return 0;
}

// __global__ void scale_big(int offset, Big b, double* out) {
//   int i = blockIdx.x * blockDim.x + threadIdx.x;
//   if (i < b.count) out[i] = (b.values[i] + offset) * b.scale;
// }
// Buffer: offset@0, b@8 (528 bytes), out@536 (544 bytes).
VGPU_SIM_KERNEL(_Z9scale_bigiN9vt_struct3BigEPd) {
  int offset;
  Big b;
  double* out;
  if (!read_params(launch, offset, b, out)) return kBadParams;
  for_each_thread(launch, [&](const Thread& t) {
    int i = t.blockIdx.x * t.blockDim.x + t.threadIdx.x;
    if (i < b.count) out[i] = (b.values[i] + offset) * b.scale;
  });
  return 0;
}
