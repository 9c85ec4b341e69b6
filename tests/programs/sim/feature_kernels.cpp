// CPU implementations of the kernels of managed_memory.cu and
// runtime_features.cu (fill_index is in both), for the sim backend (see
// test_kernels.cpp for the conventions).
#include "kernel_support.h"

using namespace vgpu_test_kernels;

// __global__ void add(int n, const float* x, float* y) {
//   int index = blockIdx.x * blockDim.x + threadIdx.x;
//   int stride = blockDim.x * gridDim.x;
//   for (int i = index; i < n; i += stride) y[i] = x[i] + y[i];
// }
VGPU_SIM_KERNEL(_Z3addiPKfPf) {
  int n;
  const float* x;
  float* y;
  if (!read_params(launch, n, x, y)) return kBadParams;
  for_each_thread(launch, [&](const Thread& t) {
    int index = t.blockIdx.x * t.blockDim.x + t.threadIdx.x;
    int stride = t.blockDim.x * t.gridDim.x;
    for (int i = index; i < n; i += stride) y[i] = x[i] + y[i];
  });
  return 0;
}

// __global__ void fill_index(int n, int* out, int offset) {
//   int i = blockIdx.x * blockDim.x + threadIdx.x;
//   if (i < n) out[i] = i + offset;
// }
VGPU_SIM_KERNEL(_Z10fill_indexiPii) {
  int n;
  int* out;
  int offset;
  if (!read_params(launch, n, out, offset)) return kBadParams;
  for_each_thread(launch, [&](const Thread& t) {
    int i = t.blockIdx.x * t.blockDim.x + t.threadIdx.x;
    if (i < n) out[i] = i + offset;
  });
  return 0;
}

// cub_tuning.cu (CUB's own kernels are planned there, never launched)
// __global__ void probe(int* out) { out[threadIdx.x] = threadIdx.x; }
VGPU_SIM_KERNEL(_Z5probePi) {
  int* out;
  if (!read_params(launch, out)) return kBadParams;
  for_each_thread(launch, [&](const Thread& t) { out[t.threadIdx.x] = static_cast<int>(t.threadIdx.x); });
  return 0;
}

// runtime_features.cu
// __global__ void scale_rows(float* base, size_t pitch, int width, int height, float factor) {
//   int x = blockIdx.x * blockDim.x + threadIdx.x;
//   int y = blockIdx.y * blockDim.y + threadIdx.y;
//   if (x < width && y < height) {
//     float* row = reinterpret_cast<float*>(reinterpret_cast<char*>(base) + y * pitch);
//     row[x] *= factor;
//   }
// }
VGPU_SIM_KERNEL(_Z10scale_rowsPfmiif) {
  float* base;
  size_t pitch;
  int width, height;
  float factor;
  if (!read_params(launch, base, pitch, width, height, factor)) return kBadParams;
  for_each_thread(launch, [&](const Thread& t) {
    int x = t.blockIdx.x * t.blockDim.x + t.threadIdx.x;
    int y = t.blockIdx.y * t.blockDim.y + t.threadIdx.y;
    if (x < width && y < height) {
      float* row = reinterpret_cast<float*>(reinterpret_cast<char*>(base) + y * pitch);
      row[x] *= factor;
    }
  });
  return 0;
}

// This plug-in uses device_printf (ABI 2), device_assert (ABI 3) and the
// texture helpers (ABI 4, texture_kernels.cpp): declared once per plug-in.
VGPU_SIM_REQUIRE_ABI(5);

// printf_program.cu: device printf (vgpu_sim_launch::device_printf).

// __global__ void hello(int tag) {
//   printf("kernel hello: block %d thread %d tag %d\n", blockIdx.x, threadIdx.x, tag);
// }
VGPU_SIM_KERNEL(_Z5helloi) {
  int tag;
  if (!read_params(launch, tag)) return kBadParams;
  for_each_thread(launch, [&](const Thread& t) {
    launch->device_printf(launch, "kernel hello: block %d thread %d tag %d\n", t.blockIdx.x,
                          t.threadIdx.x, tag);
  });
  return 0;
}

// __global__ void count_to(int n) {
//   if (threadIdx.x == 0 && blockIdx.x == 0) {
//     for (int i = 0; i < n; ++i) printf("kernel count %d of %d\n", i, n);
//   }
// }
VGPU_SIM_KERNEL(_Z8count_toi) {
  int n;
  if (!read_params(launch, n)) return kBadParams;
  for_each_thread(launch, [&](const Thread& t) {
    if (t.threadIdx.x == 0 && t.blockIdx.x == 0) {
      for (int i = 0; i < n; ++i) launch->device_printf(launch, "kernel count %d of %d\n", i, n);
    }
  });
  return 0;
}

// managed_memory.cu: __managed__ int counter = 5; __managed__ float table[1000];
// __global__ void bump_managed(int n) {
//   int i = blockIdx.x * blockDim.x + threadIdx.x;
//   if (i < n) table[i] += 1.0f;
//   if (i == 0) counter += 10;
// }
VGPU_SIM_KERNEL(_Z12bump_managedi) {
  int n;
  if (!read_params(launch, n)) return kBadParams;
  int* counter = symbol<int>(launch, "counter");
  float* table = symbol<float>(launch, "table");
  if (!counter || !table) return kUnknownSymbol;
  for_each_thread(launch, [&](const Thread& t) {
    int i = t.blockIdx.x * t.blockDim.x + t.threadIdx.x;
    if (i < n) table[i] += 1.0f;
    if (i == 0) *counter += 10;
  });
  return 0;
}

// graphs.cu (fill_index above)
// __global__ void double_plus(int n, int* data, int k) {
//   int i = blockIdx.x * blockDim.x + threadIdx.x;
//   if (i < n) data[i] = data[i] * 2 + k;
// }
VGPU_SIM_KERNEL(_Z11double_plusiPii) {
  int n;
  int* data;
  int k;
  if (!read_params(launch, n, data, k)) return kBadParams;
  for_each_thread(launch, [&](const Thread& t) {
    int i = t.blockIdx.x * t.blockDim.x + t.threadIdx.x;
    if (i < n) data[i] = data[i] * 2 + k;
  });
  return 0;
}

// assert_program.cu
// __global__ void check_small(const int* v, int n) {
//   int i = blockIdx.x * blockDim.x + threadIdx.x;
//   if (i < n) assert(v[i] < 100);
// }
VGPU_SIM_KERNEL(_Z11check_smallPKii) {
  const int* v;
  int n;
  if (!read_params(launch, v, n)) return kBadParams;
  for_each_thread(launch, [&](const Thread& t) {
    int i = t.blockIdx.x * t.blockDim.x + t.threadIdx.x;
    if (i < n && !(v[i] < 100)) {
      const unsigned block[3] = {t.blockIdx.x, t.blockIdx.y, t.blockIdx.z};
      const unsigned thread[3] = {t.threadIdx.x, t.threadIdx.y, t.threadIdx.z};
      launch->device_assert(launch, block, thread, "v[i] < 100", "assert_program.cu", 12,
                            "void check_small(const int *, int)");
    }
  });
  return 0;
}

// cooperative.cu: a cooperative grid; grid.sync() is the line between the
// two loops over every thread (all of phase 1 ends before phase 2 begins).
// __global__ void grid_sum(const int* in, int n, int* partial, int* out)
VGPU_SIM_KERNEL(_Z8grid_sumPKiiPiS1_) {
  const int* in;
  int n;
  int* partial;
  int* out;
  if (!read_params(launch, in, n, partial, out)) return kBadParams;
  for_each_thread(launch, [&](const Thread& t) {
    if (t.threadIdx.x == 0) {
      int s = 0;
      for (int i = static_cast<int>(t.blockIdx.x); i < n; i += static_cast<int>(t.gridDim.x)) s += in[i];
      partial[t.blockIdx.x] = s;
    }
  });
  // grid.sync()
  for_each_thread(launch, [&](const Thread& t) {
    if (t.blockIdx.x == 0 && t.threadIdx.x == 0 && t.blockIdx.y == 0 && t.blockIdx.z == 0) {
      int s = 0;
      for (unsigned b = 0; b < t.gridDim.x; ++b) s += partial[b];
      *out = s;
    }
  });
  return 0;
}

// clusters.cu: thread block clusters (vgpu_sim_launch::cluster).

// __global__ void cluster_ranks(int* out): thread 0 of each block writes its
// cluster rank + 100 * the cluster's block count.
VGPU_SIM_KERNEL(_Z13cluster_ranksPi) {
  int* out;
  if (!read_params(launch, out)) return kBadParams;
  for_each_thread(launch, [&](const Thread& t) {
    if (t.threadIdx.x != 0) return;
    const unsigned block = t.blockIdx.y * t.gridDim.x + t.blockIdx.x;
    out[block] = static_cast<int>(cluster_rank(launch, t) + 100 * cluster_blocks(launch));
  });
  return 0;
}

// __global__ void __cluster_dims__(2, 1, 1) fixed_pairs(int* out)
VGPU_SIM_KERNEL(_Z11fixed_pairsPi) {
  int* out;
  if (!read_params(launch, out)) return kBadParams;
  for_each_thread(launch, [&](const Thread& t) {
    if (t.threadIdx.x == 0) out[t.blockIdx.x] = static_cast<int>(cluster_rank(launch, t));
  });
  return 0;
}

// __global__ void __cluster_dims__(2, 1, 1) swap_pairs(int* out): each block
// reads its partner's shared `mine` (blockIdx.x * 10) after cluster.sync().
VGPU_SIM_KERNEL(_Z10swap_pairsPi) {
  int* out;
  if (!read_params(launch, out)) return kBadParams;
  if (cluster_blocks(launch) != 2) return kBadParams;
  for_each_thread(launch, [&](const Thread& t) {
    if (t.threadIdx.x != 0) return;
    const unsigned partner = t.blockIdx.x - cluster_rank(launch, t) + (cluster_rank(launch, t) ^ 1);
    out[t.blockIdx.x] = static_cast<int>(partner) * 10;
  });
  return 0;
}
