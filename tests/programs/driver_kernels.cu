// The kernels driver_api loads with cuModuleLoad, built three ways: a cubin,
// a fat binary and PTX (tests/programs/CMakeLists.txt). extern "C", so that
// the program looks them up by their plain names.
extern "C" {

// Set by the program through cuModuleGetGlobal.
__device__ float offset = 0.0f;

__global__ void scale_offset(const float* x, float* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + offset;
}

}  // extern "C"
