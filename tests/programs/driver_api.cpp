// driver_api: a program that uses only the CUDA driver API, as a student's
// driver-API exercise does: contexts, a module loaded from a file (argv[1]: a
// cubin, fat binary or PTX), the same image through the JIT linker (as the
// ptxjit sample does), a global set from the host, launches with
// kernelParams and with `extra`, copies, memsets, streams and events.
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cu_check.h"

namespace {

using vt::check;
using vt::fail;

constexpr int kN = 1 << 16;

void expect(const std::vector<float>& y, const std::vector<float>& x, float a, float off,
            const char* what) {
  for (int i = 0; i < kN; ++i) {
    if (y[i] != a * x[i] + off) fail("%s: y[%d] = %g, expected %g", what, i, y[i], a * x[i] + off);
  }
  check(true, "%s", what);
}

}  // namespace

int main(int argc, char** argv) {
  vt::set_name("driver_api");
  if (argc < 2) fail("usage: driver_api IMAGE (a cubin, fat binary or PTX file)");
  CU_OK(cuInit(0));
  int version = 0, count = 0;
  CU_OK(cuDriverGetVersion(&version));
  check(version >= 13000, "the driver reports CUDA 13 or later");
  CU_OK(cuDeviceGetCount(&count));
  check(count == 1, "one device");
  CUdevice dev;
  CU_OK(cuDeviceGet(&dev, 0));
  char name[128];
  size_t total = 0;
  int major = 0;
  CU_OK(cuDeviceGetName(name, sizeof name, dev));
  CU_OK(cuDeviceTotalMem(&total, dev));
  CU_OK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  std::printf("     device %s, %zu MiB, compute %d\n", name, total >> 20, major);
  check(total > 0 && major > 0, "device name, memory and compute capability");

  CUcontext ctx;
  CU_OK(cuCtxCreate(&ctx, nullptr, 0, dev));
  CUcontext current = nullptr;
  CU_OK(cuCtxGetCurrent(&current));
  check(current == ctx, "the new context is current");

  // The same image twice: from its file, and from memory.
  CUmodule from_file, from_memory;
  CU_OK(cuModuleLoad(&from_file, argv[1]));
  std::ifstream in(argv[1], std::ios::binary);
  std::vector<char> image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  image.push_back('\0');
  CU_OK(cuModuleLoadData(&from_memory, image.data()));
  CUfunction f;
  CU_OK(cuModuleGetFunction(&f, from_file, "scale_offset"));
  CUfunction missing;
  check(cuModuleGetFunction(&missing, from_file, "no_such_kernel") == CUDA_ERROR_NOT_FOUND,
        "an unknown kernel name is CUDA_ERROR_NOT_FOUND");

  // The image through the linker: one input, its log buffers, the output loaded.
  {
    const std::string path = argv[1];
    const CUjitInputType type = path.ends_with(".ptx")      ? CU_JIT_INPUT_PTX
                                : path.ends_with(".cubin")  ? CU_JIT_INPUT_CUBIN
                                                            : CU_JIT_INPUT_FATBINARY;
    char info[1024], errors[1024];
    info[0] = errors[0] = 'x';
    CUjit_option options[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                              CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* values[] = {info, reinterpret_cast<void*>(sizeof info), errors, reinterpret_cast<void*>(sizeof errors)};
    CUlinkState link;
    CU_OK(cuLinkCreate(4, options, values, &link));
    CU_OK(cuLinkAddData(link, type, image.data(), image.size() - 1, "driver_kernels", 0, nullptr, nullptr));
    void* linked = nullptr;
    size_t linked_size = 0;
    CU_OK(cuLinkComplete(link, &linked, &linked_size));
    check(linked && linked_size > 0 && errors[0] == '\0', "cuLinkComplete gives an image and an empty error log");
    CUmodule from_link;
    CU_OK(cuModuleLoadData(&from_link, linked));
    CU_OK(cuLinkDestroy(link));
    CUfunction h;
    CU_OK(cuModuleGetFunction(&h, from_link, "scale_offset"));
    CU_OK(cuModuleUnload(from_link));
    check(true, "the linked image loads as a module");
  }

  CUdeviceptr d_offset;
  size_t offset_bytes = 0;
  CU_OK(cuModuleGetGlobal(&d_offset, &offset_bytes, from_file, "offset"));
  check(offset_bytes == sizeof(float), "cuModuleGetGlobal gives the variable's size");
  const float off = 0.5f;
  CU_OK(cuMemcpyHtoD(d_offset, &off, sizeof off));

  std::vector<float> x(kN), y(kN);
  for (int i = 0; i < kN; ++i) x[i] = static_cast<float>(i % 1000);
  CUdeviceptr dx, dy;
  CU_OK(cuMemAlloc(&dx, kN * sizeof(float)));
  CU_OK(cuMemAlloc(&dy, kN * sizeof(float)));
  CU_OK(cuMemcpyHtoD(dx, x.data(), kN * sizeof(float)));

  // kernelParams, on a stream, timed by events.
  CUstream stream;
  CUevent start, stop;
  CU_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CU_OK(cuEventCreate(&start, CU_EVENT_DEFAULT));
  CU_OK(cuEventCreate(&stop, CU_EVENT_DEFAULT));
  float a = 2.0f;
  int n = kN;
  void* params[] = {&dx, &dy, &a, &n};
  CU_OK(cuEventRecord(start, stream));
  CU_OK(cuLaunchKernel(f, kN / 256, 1, 1, 256, 1, 1, 0, stream, params, nullptr));
  CU_OK(cuEventRecord(stop, stream));
  CU_OK(cuStreamSynchronize(stream));
  float ms = -1;
  CU_OK(cuEventElapsedTime(&ms, start, stop));
  check(ms >= 0, "events time the launch");
  CU_OK(cuMemcpyDtoH(y.data(), dy, kN * sizeof(float)));
  expect(y, x, a, off, "launch with kernelParams");

  // `extra`: the arguments packed by the program, at the offsets the driver reports.
  a = 3.0f;
  std::vector<unsigned char> packed(64, 0);
  size_t end = 0;
  const void* values[] = {&dx, &dy, &a, &n};
  for (size_t i = 0; i < 4; ++i) {
    size_t at = 0, size = 0;
    CU_OK(cuFuncGetParamInfo(f, i, &at, &size));
    std::memcpy(packed.data() + at, values[i], size);
    end = at + size;
  }
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, packed.data(), CU_LAUNCH_PARAM_BUFFER_SIZE, &end,
                   CU_LAUNCH_PARAM_END};
  CUfunction g;
  CU_OK(cuModuleGetFunction(&g, from_memory, "scale_offset"));
  CUdeviceptr d_offset2;
  CU_OK(cuModuleGetGlobal(&d_offset2, nullptr, from_memory, "offset"));
  check(d_offset2 != d_offset, "each module has its own globals");
  CU_OK(cuMemcpyHtoD(d_offset2, &off, sizeof off));
  CU_OK(cuLaunchKernel(g, kN / 256, 1, 1, 256, 1, 1, 0, nullptr, nullptr, extra));
  CU_OK(cuCtxSynchronize());
  CU_OK(cuMemcpyDtoH(y.data(), dy, kN * sizeof(float)));
  expect(y, x, a, off, "launch with extra (a packed buffer)");

  // Memsets of every width, a device-to-device copy, an asynchronous read-back.
  CU_OK(cuMemsetD32(dy, 0x3f800000u, kN));  // 1.0f: bytes that differ
  CU_OK(cuMemcpyDtoDAsync(dx, dy, kN * sizeof(float), stream));
  std::vector<float> z(kN, -1.0f);
  CU_OK(cuMemcpyDtoHAsync(z.data(), dx, kN * sizeof(float), stream));
  CU_OK(cuStreamSynchronize(stream));
  bool ones = true;
  for (float v : z) ones &= v == 1.0f;
  check(ones, "cuMemsetD32, cuMemcpyDtoDAsync and cuMemcpyDtoHAsync");
  CU_OK(cuMemsetD8(dy, 0, kN * sizeof(float)));
  CU_OK(cuMemsetD16(dy, 0x3c00, 2));
  unsigned short halves[3] = {1, 1, 1};
  CU_OK(cuMemcpyDtoH(halves, dy, sizeof halves));
  check(halves[0] == 0x3c00 && halves[1] == 0x3c00 && halves[2] == 0, "cuMemsetD8 and cuMemsetD16");

  size_t free_bytes = 0, total_bytes = 0;
  CU_OK(cuMemGetInfo(&free_bytes, &total_bytes));
  check(free_bytes <= total_bytes && total_bytes == total, "cuMemGetInfo agrees with the device");
  CUdeviceptr base = 0;
  size_t size = 0;
  CU_OK(cuMemGetAddressRange(&base, &size, dx + 100));
  check(base == dx && size == kN * sizeof(float), "cuMemGetAddressRange");

  CU_OK(cuEventDestroy(start));
  CU_OK(cuEventDestroy(stop));
  CU_OK(cuStreamDestroy(stream));
  CU_OK(cuMemFree(dx));
  CU_OK(cuMemFree(dy));
  CU_OK(cuModuleUnload(from_file));
  CU_OK(cuModuleUnload(from_memory));
  CU_OK(cuCtxDestroy(ctx));
  vt::pass();
}
