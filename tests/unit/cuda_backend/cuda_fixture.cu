// Kernels for the cuda backend's tests. Built into a fat binary (nvcc -fatbin);
// the FAKE driver (fake_driver/fake_cuda.h) acts on their names, so what they
// would do on a GPU only matters for reading.
struct Pair {
  double x;
  int y;
};

__device__ int counter = 7;

__global__ void fill(int* p, int value, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = value;
}

__global__ void spin(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

__global__ void bump(int delta) { atomicAdd(&counter, delta); }

__global__ void hang(volatile int* flag) {
  while (*flag == 0) {
  }
}

__global__ void fault(int* p) { p[threadIdx.x] = 1; }  // called with a bad pointer

__global__ void trap_now() { __trap(); }

__global__ void crash() {}

// Uses the device heap: its size is fixed from then on.
__global__ void use_heap(int bytes) { free(malloc(bytes)); }

__global__ void takes_pair(Pair p, int* out) { *out = p.y + static_cast<int>(p.x); }

// printf("say %d thread %d\n", tag, threadIdx.x): the fake driver prints
// that for it. (A real printf here would add its format string to the
// module's variables, which the other tests count.)
__global__ void say(int tag) { (void)tag; }

__global__ void tex_read(cudaTextureObject_t t, int x, int y, float* out) { *out = tex2D<float>(t, x + 0.5f, y + 0.5f); }

// Its thread block cluster shape is fixed at compile time: the driver takes
// no other at launch.
__global__ void __cluster_dims__(2, 1, 1) paired(int* p) { p[blockIdx.x] = 1; }

// Takes ns of the FAKE driver's modeled time (its timing model); extern "C",
// so its name is just "work".
extern "C" __global__ void work(unsigned long long ns) { (void)ns; }
