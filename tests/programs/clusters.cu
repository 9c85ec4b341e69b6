// clusters: thread block clusters (Hopper, sm_90), as the CUDA programming
// guide and NVIDIA's libraries use them:
//   1. the device says it has them (cudaDevAttrClusterLaunch);
//   2. cudaLaunchKernelEx with a 2x2 cluster: each block knows its rank in
//      its cluster and the cluster's size;
//   3. a kernel whose shape is compiled in (__cluster_dims__) launched with
//      <<<>>>; its attributes say the shape;
//   4. distributed shared memory: each block reads its partner's shared
//      memory across the cluster (cluster.map_shared_rank);
//   5. refused as CUDA refuses them: a grid that is not a multiple of the
//      shape, 16 blocks without the non-portable attribute (then allowed);
//   6. the occupancy calculator counts clusters;
//   7. a captured cluster launch replays from a graph with its shape.
#include <cooperative_groups.h>

#include <vector>

#include "common.h"

namespace cg = cooperative_groups;

// out[block] = its rank in the cluster + 100 * the cluster's block count.
__global__ void cluster_ranks(int* out) {
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0) {
    const unsigned block = blockIdx.y * gridDim.x + blockIdx.x;
    out[block] = static_cast<int>(cluster.block_rank() + 100 * cluster.num_blocks());
  }
}

__global__ void __cluster_dims__(2, 1, 1) fixed_pairs(int* out) {
  if (threadIdx.x == 0) out[blockIdx.x] = static_cast<int>(cg::this_cluster().block_rank());
}

// Pairs of blocks swap a value through each other's shared memory.
__global__ void __cluster_dims__(2, 1, 1) swap_pairs(int* out) {
  __shared__ int mine;
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0) mine = static_cast<int>(blockIdx.x) * 10;
  cluster.sync();
  if (threadIdx.x == 0) {
    const int* theirs = cluster.map_shared_rank(&mine, cluster.block_rank() ^ 1);
    out[blockIdx.x] = *theirs;
  }
  cluster.sync();  // a block's shared memory must outlive its partner's read
}

namespace {

cudaError_t launch_ranks(dim3 grid, dim3 cluster, int* out, cudaStream_t stream = nullptr) {
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = cluster.x;
  attr.val.clusterDim.y = cluster.y;
  attr.val.clusterDim.z = cluster.z;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = dim3(32);
  config.stream = stream;
  config.attrs = &attr;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, cluster_ranks, out);
}

std::vector<int> fetch(const int* d, int n) {
  std::vector<int> h(n);
  CUDA_OK(cudaMemcpy(h.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost));
  return h;
}

// The 2x2-cluster ranks of a 4x4 grid, as cluster_ranks writes them.
bool ranks_2x2(const std::vector<int>& got) {
  for (int by = 0; by < 4; ++by) {
    for (int bx = 0; bx < 4; ++bx) {
      if (got[by * 4 + bx] != (bx % 2) + (by % 2) * 2 + 400) return false;
    }
  }
  return true;
}

}  // namespace

int main() {
  vt::set_name("clusters");
  int can = 0;
  CUDA_OK(cudaDeviceGetAttribute(&can, cudaDevAttrClusterLaunch, 0));
  vt::check(can == 1, "the device supports thread block clusters");

  int* out = nullptr;
  CUDA_OK(cudaMalloc(&out, 64 * sizeof(int)));
  CUDA_OK(launch_ranks(dim3(4, 4), dim3(2, 2, 1), out));
  vt::check(ranks_2x2(fetch(out, 16)), "a 4x4 grid in 2x2 clusters: each block has its rank, 4 blocks each");

  cudaFuncAttributes fa{};
  CUDA_OK(cudaFuncGetAttributes(&fa, fixed_pairs));
  vt::check(fa.requiredClusterWidth == 2 && fa.requiredClusterHeight == 1 && fa.requiredClusterDepth == 1,
            "__cluster_dims__(2, 1, 1): the function's attributes say %dx%dx%d", fa.requiredClusterWidth,
            fa.requiredClusterHeight, fa.requiredClusterDepth);
  fixed_pairs<<<8, 32>>>(out);
  CUDA_OK(cudaGetLastError());
  std::vector<int> got = fetch(out, 8);
  bool pairs = true;
  for (int b = 0; b < 8; ++b) pairs = pairs && got[b] == b % 2;
  vt::check(pairs, "a kernel with its shape compiled in runs in pairs with <<<8, 32>>>");

  swap_pairs<<<6, 32>>>(out);
  CUDA_OK(cudaGetLastError());
  got = fetch(out, 6);
  bool swapped = true;
  for (int b = 0; b < 6; ++b) swapped = swapped && got[b] == (b ^ 1) * 10;
  vt::check(swapped, "distributed shared memory: each block read its partner's value");

  cudaError_t e = launch_ranks(dim3(3), dim3(2, 1, 1), out);
  vt::check(e == cudaErrorInvalidClusterSize, "a grid of 3 in clusters of 2 is refused (%s)", vt::err_text(e));
  (void)cudaGetLastError();
  e = launch_ranks(dim3(16), dim3(16, 1, 1), out);
  vt::check(e == cudaErrorInvalidClusterSize, "16 blocks a cluster without the non-portable attribute (%s)",
            vt::err_text(e));
  (void)cudaGetLastError();
  CUDA_OK(cudaFuncSetAttribute(cluster_ranks, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  CUDA_OK(launch_ranks(dim3(16), dim3(16, 1, 1), out));
  got = fetch(out, 16);
  vt::check(got[15] == 15 + 1600, "with it, one cluster of 16 blocks (block 15: %d)", got[15]);

  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = 2;
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(64);
  config.blockDim = dim3(128);
  config.attrs = &attr;
  config.numAttrs = 1;
  int clusters = 0;
  CUDA_OK(cudaOccupancyMaxActiveClusters(&clusters, cluster_ranks, &config));
  vt::check(clusters > 0, "the occupancy calculator fits %d clusters of 2 at once", clusters);

  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  CUDA_OK(cudaMemset(out, 0, 64 * sizeof(int)));
  cudaGraph_t graph;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  CUDA_OK(launch_ranks(dim3(4, 4), dim3(2, 2, 1), out, stream));
  CUDA_OK(cudaStreamEndCapture(stream, &graph));
  vt::check(fetch(out, 1)[0] == 0, "a captured launch does not run");
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  CUDA_OK(cudaGraphLaunch(exec, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  vt::check(ranks_2x2(fetch(out, 16)), "the graph replays it in its 2x2 clusters");
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(graph));
  CUDA_OK(cudaStreamDestroy(stream));
  CUDA_OK(cudaFree(out));
  vt::pass();
}
