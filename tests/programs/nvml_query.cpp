// nvml_query: what NVML says about the GPU, the way monitoring tools ask it.
// A plain C++ program that does not link NVML: it opens libnvidia-ml.so.1 by
// name, as pynvml and go-nvml do, so under vgpu-run it gets vgpu's (and on a
// host with a GPU, NVIDIA's). Prints
//   count=N name=NAME total=BYTES uuid=UUID
// (and util_max=PERCENT with `util MS`),
// then PASS nvml_query (exit 0), or FAIL nvml_query: WHY (exit 1).
#include <dlfcn.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

// The few declarations of NVIDIA's nvml.h this program needs.
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlUtilization_t {
  unsigned gpu, memory;
};

[[noreturn]] void fail(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::printf("FAIL nvml_query: ");
  std::vprintf(fmt, ap);
  std::printf("\n");
  va_end(ap);
  std::exit(1);
}

template <class Fn>
Fn symbol(void* lib, const char* name) {
  void* p = dlsym(lib, name);
  if (!p) fail("dlsym(%s): %s", name, dlerror());
  return reinterpret_cast<Fn>(p);
}

void check(nvmlReturn_t r, const char* call) {
  if (r != 0) fail("%s returned %d", call, r);
}

}  // namespace

// nvml_query [util N]: with "util", also asks nvmlDeviceGetUtilizationRates N
// times (each answer covers at least 100 ms) and prints util_max=<highest gpu %>.
int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const bool util = argc >= 3 && std::strcmp(argv[1], "util") == 0;
  const long util_calls = util ? std::strtol(argv[2], nullptr, 10) : 0;
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) fail("dlopen(libnvidia-ml.so.1): %s", dlerror());

  auto init = symbol<nvmlReturn_t (*)()>(lib, "nvmlInit_v2");
  auto get_count = symbol<nvmlReturn_t (*)(unsigned*)>(lib, "nvmlDeviceGetCount_v2");
  auto get_handle = symbol<nvmlReturn_t (*)(unsigned, nvmlDevice_t*)>(lib, "nvmlDeviceGetHandleByIndex_v2");
  auto get_memory = symbol<nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*)>(lib, "nvmlDeviceGetMemoryInfo");
  auto get_name = symbol<nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned)>(lib, "nvmlDeviceGetName");
  auto get_uuid = symbol<nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned)>(lib, "nvmlDeviceGetUUID");
  auto shutdown = symbol<nvmlReturn_t (*)()>(lib, "nvmlShutdown");

  check(init(), "nvmlInit_v2");
  unsigned count = 0;
  check(get_count(&count), "nvmlDeviceGetCount_v2");
  if (count < 1) fail("nvmlDeviceGetCount_v2 = %u", count);
  nvmlDevice_t dev = nullptr;
  check(get_handle(0, &dev), "nvmlDeviceGetHandleByIndex_v2");
  nvmlMemory_t mem{};
  check(get_memory(dev, &mem), "nvmlDeviceGetMemoryInfo");
  if (mem.total == 0 || mem.used + mem.free != mem.total)
    fail("memory total %llu free %llu used %llu", mem.total, mem.free, mem.used);
  char name[96] = {};  // NVML_DEVICE_NAME_V2_BUFFER_SIZE
  check(get_name(dev, name, sizeof name), "nvmlDeviceGetName");
  char uuid[96] = {};  // NVML_DEVICE_UUID_V2_BUFFER_SIZE
  check(get_uuid(dev, uuid, sizeof uuid), "nvmlDeviceGetUUID");
  std::printf("count=%u name=%s total=%llu uuid=%s\n", count, name, mem.total, uuid);
  if (util) {
    auto get_util = symbol<nvmlReturn_t (*)(nvmlDevice_t, nvmlUtilization_t*)>(lib, "nvmlDeviceGetUtilizationRates");
    unsigned highest = 0;
    for (long i = 0; i < util_calls; ++i) {
      nvmlUtilization_t u{};
      check(get_util(dev, &u), "nvmlDeviceGetUtilizationRates");
      if (u.gpu > 100) fail("utilization %u%%", u.gpu);
      highest = std::max(highest, u.gpu);
    }
    std::printf("util_max=%u\n", highest);
  }
  check(shutdown(), "nvmlShutdown");
  std::printf("PASS nvml_query\n");
  return 0;
}
