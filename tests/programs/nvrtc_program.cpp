// nvrtc_program: compiles a kernel from a string at run time with NVRTC (in
// the guest), loads it with the driver API and launches it: what a course's
// JIT exercise (or a Python wrapper such as CuPy) does. Twice: to PTX, and to
// a cubin for the device's own compute capability, as NVIDIA's NVRTC samples
// do (on sim the cubin runs through the PTX NVRTC compiled it from).
#include <nvrtc.h>

#include <string>
#include <string_view>
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

// NVRTC's output for `arch`: PTX for compute_XX, a cubin for sm_XX.
std::vector<char> compile(const std::string& arch) {
  nvrtcProgram prog;
  NVRTC_OK(nvrtcCreateProgram(&prog, kSource, "square_plus.cu", 0, nullptr, nullptr));
  const std::string option = "--gpu-architecture=" + arch;
  const char* options[] = {option.c_str()};
  const nvrtcResult compiled = nvrtcCompileProgram(prog, 1, options);
  size_t log_size = 0;
  NVRTC_OK(nvrtcGetProgramLogSize(prog, &log_size));
  std::string log(log_size, '\0');
  NVRTC_OK(nvrtcGetProgramLog(prog, log.data()));
  if (compiled != NVRTC_SUCCESS) vt::fail("nvrtcCompileProgram: %s\n%s", nvrtcGetErrorString(compiled), log.c_str());
  std::vector<char> code;
  if (arch.starts_with("sm_")) {
    size_t size = 0;
    NVRTC_OK(nvrtcGetCUBINSize(prog, &size));
    code.resize(size);
    NVRTC_OK(nvrtcGetCUBIN(prog, code.data()));
    if (size < 64 || std::string_view(code.data(), 4) != "\x7f" "ELF") vt::fail("NVRTC's %s cubin is not an ELF image", arch.c_str());
    std::printf("ok   NVRTC compiled the kernel to a %zu-byte %s cubin\n", size, arch.c_str());
  } else {
    size_t size = 0;
    NVRTC_OK(nvrtcGetPTXSize(prog, &size));
    code.resize(size);
    NVRTC_OK(nvrtcGetPTX(prog, code.data()));
    // NVRTC's compile cache (a private driver table) is refused, so the output
    // is the real PTX, never an empty "cache hit".
    if (size < 100 || std::string(code.data()).find(".entry nvrtc_square_plus") == std::string::npos)
      vt::fail("NVRTC returned %zu bytes of PTX without the kernel", size);
    std::printf("ok   NVRTC compiled the kernel to %zu bytes of PTX\n", size);
  }
  NVRTC_OK(nvrtcDestroyProgram(&prog));
  return code;
}

// Loads `image`, runs its kernel over n elements and checks every result.
void run(const std::vector<char>& image, const char* what) {
  CUmodule module;
  CU_OK(cuModuleLoadDataEx(&module, image.data(), 0, nullptr, nullptr));
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
  std::printf("ok   the kernel from %s computed all %d results\n", what, n);
  CU_OK(cuMemFree(din));
  CU_OK(cuMemFree(dout));
  CU_OK(cuModuleUnload(module));
}

}  // namespace

int main() {
  vt::set_name("nvrtc_program");
  const std::vector<char> ptx = compile("compute_90");
  CU_OK(cuInit(0));
  CUdevice dev;
  CU_OK(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CU_OK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU_OK(cuCtxSetCurrent(ctx));
  run(ptx, "PTX");
  int major = 0, minor = 0;
  CU_OK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CU_OK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  run(compile("sm_" + std::to_string(major * 10 + minor)), "the cubin");
  CU_OK(cuDevicePrimaryCtxRelease(dev));
  vt::pass();
}
