// nvrtc_program: compiles a kernel from a string at run time with NVRTC (in
// the guest), loads the PTX with the driver API and launches it: what a
// course's JIT exercise (or a Python wrapper such as CuPy) does.
#include <nvrtc.h>

#include <string>
#include <vector>

#include "cu_check.h"

namespace {

void nvrtc_ok(nvrtcResult r, const char* call, int line) {
  if (r != NVRTC_SUCCESS) vt::fail("line %d: %s returned %s", line, call, nvrtcGetErrorString(r));
}
#define NVRTC_OK(call) nvrtc_ok((call), #call, __LINE__)

const char* kSource = R"(
extern "C" __global__ void nvrtc_square_plus(const int* in, int* out, int add, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * in[i] + add;
}
)";

}  // namespace

int main() {
  vt::set_name("nvrtc_program");
  nvrtcProgram prog;
  NVRTC_OK(nvrtcCreateProgram(&prog, kSource, "square_plus.cu", 0, nullptr, nullptr));
  const char* options[] = {"--gpu-architecture=compute_90"};
  const nvrtcResult compiled = nvrtcCompileProgram(prog, 1, options);
  size_t log_size = 0;
  NVRTC_OK(nvrtcGetProgramLogSize(prog, &log_size));
  std::string log(log_size, '\0');
  NVRTC_OK(nvrtcGetProgramLog(prog, log.data()));
  if (compiled != NVRTC_SUCCESS) vt::fail("nvrtcCompileProgram: %s\n%s", nvrtcGetErrorString(compiled), log.c_str());
  size_t ptx_size = 0;
  NVRTC_OK(nvrtcGetPTXSize(prog, &ptx_size));
  std::vector<char> ptx(ptx_size);
  NVRTC_OK(nvrtcGetPTX(prog, ptx.data()));
  NVRTC_OK(nvrtcDestroyProgram(&prog));
  // NVRTC's compile cache (a private driver table) is refused, so the output
  // is the real PTX, never an empty "cache hit".
  if (ptx_size < 100 || std::string(ptx.data()).find(".entry nvrtc_square_plus") == std::string::npos)
    vt::fail("NVRTC returned %zu bytes of PTX without the kernel", ptx_size);
  std::printf("ok   NVRTC compiled the kernel to %zu bytes of PTX\n", ptx_size);

  CU_OK(cuInit(0));
  CUdevice dev;
  CU_OK(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CU_OK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU_OK(cuCtxSetCurrent(ctx));
  CUmodule module;
  CU_OK(cuModuleLoadDataEx(&module, ptx.data(), 0, nullptr, nullptr));
  CUfunction f;
  CU_OK(cuModuleGetFunction(&f, module, "nvrtc_square_plus"));

  const int n = 10000, add = 7;
  std::vector<int> in(n), out(n, 0);
  for (int i = 0; i < n; ++i) in[i] = i % 300 - 150;
  CUdeviceptr din, dout;
  CU_OK(cuMemAlloc(&din, n * sizeof(int)));
  CU_OK(cuMemAlloc(&dout, n * sizeof(int)));
  CU_OK(cuMemcpyHtoD(din, in.data(), n * sizeof(int)));
  int count = n, plus = add;
  void* params[] = {&din, &dout, &plus, &count};
  CU_OK(cuLaunchKernel(f, (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr));
  CU_OK(cuMemcpyDtoH(out.data(), dout, n * sizeof(int)));
  for (int i = 0; i < n; ++i) {
    if (out[i] != in[i] * in[i] + add) vt::fail("out[%d] = %d, expected %d", i, out[i], in[i] * in[i] + add);
  }
  std::printf("ok   the JIT-compiled kernel computed all %d results\n", n);
  CU_OK(cuMemFree(din));
  CU_OK(cuMemFree(dout));
  CU_OK(cuModuleUnload(module));
  CU_OK(cuDevicePrimaryCtxRelease(dev));
  vt::pass();
}
