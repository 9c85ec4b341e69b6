// Kernels whose CPU implementations live in sim_test_kernels.cpp. Compiled to
// a fat binary at build time so module_load sees what nvcc really produces;
// the device code here runs only where no plug-in implements a kernel (the
// interpreter runs its PTX).
struct Pair {
  int a;
  double b;
};

__device__ int g_counter = 42;
__constant__ float g_scale[4] = {1.f, 2.f, 3.f, 4.f};

__global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
__global__ void probe(unsigned* out) { out[0] = gridDim.x; }
__global__ void with_struct(Pair p, char c, int* out) {
  out[0] = p.a;
  out[1] = static_cast<int>(p.b);
  out[2] = c;
}
__global__ void read_globals(int* out) {
  out[0] = g_counter;
  out[1] = static_cast<int>(g_scale[1]);
}
__global__ void bump_counter(int by) { atomicAdd(&g_counter, by); }
__global__ void crash(int* p) { *p = 1; }
__global__ void spin(int* flag) {
  while (*(volatile int*)flag == 0) {
  }
}
__global__ void fail() {}
__global__ void escape(long long* out) { out[0] = 0; }
// No plug-in implements it, and its PTX holds an instruction the sim's
// interpreter refuses (%envreg0, which no kernel of CUDA's own reads; if it
// ever learns it, pick another).
__global__ void no_impl(int x) {
  unsigned v;
  asm volatile("mov.u32 %0, %%envreg0;" : "=r"(v));
  (void)v;
  (void)x;
}
// No plug-in either: these run from their PTX (the interpreter).
__global__ void interpreted(int* out, int base) {
  __shared__ int twice[32];
  twice[threadIdx.x] = 2 * static_cast<int>(threadIdx.x);
  __syncthreads();
  out[threadIdx.x] = base + twice[31 - threadIdx.x] + g_counter;
}
__global__ void traps() { asm volatile("trap;"); }
// Reads through the pointer table[0]: a null one is an illegal address, as on a GPU.
__global__ void reads_through(int** table, int* out) { out[threadIdx.x] = table[0][threadIdx.x + 1]; }
// At most 64 threads a block (its PTX's .maxntid).
__global__ void __launch_bounds__(64) bounded(int* out) { out[threadIdx.x] = static_cast<int>(threadIdx.x); }
// The device heap in the worker: a block kept from one launch to the next;
// one past CUDA's default 8 MiB heap is refused (null).
extern "C" __global__ void heap_keep(unsigned long long* slot, int bytes) {
  int* p = static_cast<int*>(malloc(bytes));
  if (p) {
    p[0] = 11;
    p[bytes / 4 - 1] = 22;
  }
  slot[0] = reinterpret_cast<unsigned long long>(p);
}
extern "C" __global__ void heap_read(unsigned long long* slot, int bytes, int* out) {
  int* p = reinterpret_cast<int*>(slot[0]);
  out[0] = p[0];
  out[1] = p[bytes / 4 - 1];
  free(p);
  void* big = malloc(9 << 20);
  out[2] = big == nullptr;
  free(big);
}
__global__ void slow(unsigned long long ns) { (void)ns; }
__global__ void read_texture(cudaTextureObject_t tex, float* out) { out[0] = tex2D<float>(tex, 1.5f, 0.5f); }
