// virtual_memory: the driver's virtual memory management as NVIDIA's
// vectorAddMMAP sample uses it (reserve a range, create physical memory, map
// it, set access, launch on it, unmap, free), and what a program may then
// rely on: two allocations mapped side by side in one range form one buffer
// a kernel and a copy see whole; an allocation unmapped while still held
// keeps its bytes and shows them at its next address; a retained handle
// names what is mapped; and what vgpu refuses, by name: one allocation at
// two addresses, read-only access, handles for other processes.
// argv[1]: the driver kernels' image (scale_offset).
#include <cstring>
#include <vector>

#include "cu_check.h"

namespace {

using vt::check;
using vt::fail;

CUmemAllocationProp device_prop() {
  CUmemAllocationProp p{};
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = 0;
  return p;
}

void set_access(CUdeviceptr p, size_t size) {
  CUmemAccessDesc a{};
  a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  a.location.id = 0;
  a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CU_OK(cuMemSetAccess(p, size, &a, 1));
}

}  // namespace

int main(int argc, char** argv) {
  vt::set_name("virtual_memory");
  if (argc < 2) fail("usage: virtual_memory IMAGE");
  CU_OK(cuInit(0));
  CUdevice dev;
  CU_OK(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CU_OK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU_OK(cuCtxSetCurrent(ctx));
  int vmm = 0;
  CU_OK(cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev));
  check(vmm == 1, "the device says it manages virtual memory");

  const CUmemAllocationProp prop = device_prop();
  size_t granularity = 0;
  CU_OK(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  check(granularity > 0 && (granularity & (granularity - 1)) == 0, "a power-of-two granularity");

  // Two allocations mapped side by side: one buffer of 2 x granularity.
  const size_t half = granularity, size = 2 * granularity;
  CUdeviceptr base = 0;
  CU_OK(cuMemAddressReserve(&base, size, 0, 0, 0));
  check(base % granularity == 0, "the range is aligned to the granularity");
  CUmemGenericAllocationHandle first, second;
  CU_OK(cuMemCreate(&first, half, &prop, 0));
  CU_OK(cuMemCreate(&second, half, &prop, 0));
  CU_OK(cuMemMap(base, half, 0, first, 0));
  CU_OK(cuMemMap(base + half, half, 0, second, 0));
  CU_OK(cuMemRelease(second));  // as vectorAddMMAP does: the mapping keeps it
  set_access(base, size);

  const int n = static_cast<int>(size / sizeof(float));
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) x[i] = static_cast<float>(i % 1000);
  CUdeviceptr out = 0;
  CU_OK(cuMemAlloc(&out, size));
  CU_OK(cuMemcpyHtoD(base, x.data(), size));
  CUmodule module;
  CU_OK(cuModuleLoad(&module, argv[1]));
  CUfunction scale;
  CU_OK(cuModuleGetFunction(&scale, module, "scale_offset"));
  float a = 2.0f;
  void* args[] = {&base, &out, &a, const_cast<int*>(&n)};
  CU_OK(cuLaunchKernel(scale, (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));
  CU_OK(cuMemcpyDtoH(y.data(), out, size));
  for (int i = 0; i < n; ++i) {
    if (y[i] != 2.0f * x[i]) fail("y[%d] = %f, not %f: the kernel did not see the mapped range whole", i, y[i], 2.0f * x[i]);
  }

  // A retained handle names what is mapped there.
  CUmemGenericAllocationHandle retained;
  CU_OK(cuMemRetainAllocationHandle(&retained, reinterpret_cast<void*>(base + half + 64)));
  check(retained == second, "cuMemRetainAllocationHandle finds the second allocation");
  CU_OK(cuMemRelease(retained));
  CUmemAllocationProp got{};
  CU_OK(cuMemGetAllocationPropertiesFromHandle(&got, first));
  check(got.location.id == 0 && got.type == CU_MEM_ALLOCATION_TYPE_PINNED, "the allocation's properties");
  unsigned long long flags = 0;
  CUmemLocation here{CU_MEM_LOCATION_TYPE_DEVICE, 0};
  CU_OK(cuMemGetAccess(&flags, &here, base));
  check(flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE, "mapped memory is read-write");

  // Refused by name: one allocation at two addresses, read-only access,
  // memory for other processes.
  CUdeviceptr other = 0;
  CU_OK(cuMemAddressReserve(&other, half, 0, 0, 0));
  check(cuMemMap(other, half, 0, first, 0) == CUDA_ERROR_NOT_SUPPORTED, "aliasing is refused");
  CUmemAccessDesc ro{};
  ro.location = here;
  ro.flags = CU_MEM_ACCESS_FLAGS_PROT_READ;
  check(cuMemSetAccess(base, size, &ro, 1) == CUDA_ERROR_NOT_SUPPORTED, "read-only access is refused");
  CUmemAllocationProp shared = prop;
  shared.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CUmemGenericAllocationHandle never;
  check(cuMemCreate(&never, half, &shared, 0) == CUDA_ERROR_NOT_SUPPORTED, "shareable handles are refused");
  CUmemGenericAllocationHandle third;
  CU_OK(cuMemCreate(&third, half, &prop, 0));
  check(cuMemMap(base, half, 0, third, 0) == CUDA_ERROR_INVALID_VALUE, "a map over a map is invalid");
  check(cuMemMap(base + 64, half, 0, third, 0) == CUDA_ERROR_INVALID_VALUE, "a map off the granularity is invalid");
  CU_OK(cuMemRelease(third));

  // Unmapped while still held, the first allocation keeps its bytes and
  // shows them at its next address; the released second one is gone.
  CU_OK(cuMemUnmap(base, size));
  CU_OK(cuMemGetAccess(&flags, &here, base));
  check(flags == CU_MEM_ACCESS_FLAGS_PROT_NONE, "unmapped memory has no access");
  check(cuMemAddressFree(other, size) == CUDA_ERROR_INVALID_VALUE, "a range is freed at its own size");
  CU_OK(cuMemMap(other, half, 0, first, 0));
  set_access(other, half);
  std::vector<float> back(half / sizeof(float));
  CU_OK(cuMemcpyDtoH(back.data(), other, half));
  check(std::memcmp(back.data(), x.data(), half) == 0, "an unmapped allocation kept its bytes");
  CU_OK(cuMemUnmap(other, half));
  CU_OK(cuMemRelease(first));
  check(cuMemRelease(first) == CUDA_ERROR_INVALID_VALUE, "a released handle is gone");
  CU_OK(cuMemAddressFree(other, half));
  CU_OK(cuMemAddressFree(base, size));
  CU_OK(cuMemFree(out));

  // What was reserved is given back: reserving and freeing many times does
  // not run out of the tenant's memory.
  size_t free_before = 0, total = 0;
  CU_OK(cuMemGetInfo(&free_before, &total));
  for (int round = 0; round < 64; ++round) {
    CUdeviceptr p = 0;
    CUmemGenericAllocationHandle h;
    CU_OK(cuMemAddressReserve(&p, 4 * granularity, 0, 0, 0));
    CU_OK(cuMemCreate(&h, 4 * granularity, &prop, 0));
    CU_OK(cuMemMap(p, 4 * granularity, 0, h, 0));
    CU_OK(cuMemRelease(h));
    CU_OK(cuMemUnmap(p, 4 * granularity));
    CU_OK(cuMemAddressFree(p, 4 * granularity));
  }
  size_t free_after = 0;
  CU_OK(cuMemGetInfo(&free_after, &total));
  check(free_after == free_before, "every reserved range was given back");
  vt::pass();
}
