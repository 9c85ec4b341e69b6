// NVRTC's cubins, made runnable where there is no GPU. A program that
// compiles with `--gpu-architecture=sm_XX` (NVIDIA's samples do, for the
// device's compute capability) gets machine code only, which the sim backend
// cannot run. NVRTC keeps the PTX it compiled through, so this library, which
// vgpu-run preloads, wraps nvrtcGetCUBIN: the program gets NVRTC's cubin
// unchanged, and the PTX is remembered by the cubin's bytes. When that cubin
// is loaded (cuModuleLoadData, cuLinkAddData), it travels to the host as a
// fat binary with the PTX beside it: a GPU runs the cubin, sim the PTX.
#include <dlfcn.h>
#include <nvrtc.h>

#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "driver_state.h"

namespace {

// The most recent cubins' PTX: a program that compiles in a loop does not
// grow this without bound, and a loaded module no longer needs its entry.
constexpr size_t kRemembered = 64;

struct Companions {
  std::mutex mutex;
  std::deque<std::pair<std::string, std::string>> entries;  // (cubin, ptx)
};

// Leaked with the process, like the driver's own state.
Companions& companions() {
  static auto* c = new Companions;
  return *c;
}

template <class Fn>
Fn next_symbol(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

void remember(std::string cubin, std::string ptx) {
  Companions& c = companions();
  std::lock_guard lock(c.mutex);
  c.entries.emplace_back(std::move(cubin), std::move(ptx));
  if (c.entries.size() > kRemembered) c.entries.pop_front();
}

}  // namespace

namespace vgpu::driver {

std::string jit_ptx_for(const uint8_t* cubin, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(cubin), size);
  Companions& c = companions();
  std::lock_guard lock(c.mutex);
  for (auto it = c.entries.rbegin(); it != c.entries.rend(); ++it) {
    if (it->first == bytes) return it->second;
  }
  return {};
}

}  // namespace vgpu::driver

extern "C" __attribute__((visibility("default"))) nvrtcResult nvrtcGetCUBIN(nvrtcProgram prog, char* cubin) {
  using GetCubin = nvrtcResult (*)(nvrtcProgram, char*);
  using GetSize = nvrtcResult (*)(nvrtcProgram, size_t*);
  static const auto real = next_symbol<GetCubin>("nvrtcGetCUBIN");
  // Only a program linked with NVRTC calls this, so the real one is there.
  if (!real) return NVRTC_ERROR_INTERNAL_ERROR;
  const nvrtcResult r = real(prog, cubin);
  if (r != NVRTC_SUCCESS) return r;
  static const auto cubin_size = next_symbol<GetSize>("nvrtcGetCUBINSize");
  static const auto ptx_size = next_symbol<GetSize>("nvrtcGetPTXSize");
  static const auto get_ptx = next_symbol<GetCubin>("nvrtcGetPTX");
  size_t n = 0, p = 0;
  // Without PTX (an NVRTC too old to keep it, or LTO) the cubin goes alone.
  if (!cubin_size || !ptx_size || !get_ptx || cubin_size(prog, &n) != NVRTC_SUCCESS ||
      ptx_size(prog, &p) != NVRTC_SUCCESS || p == 0) {
    return r;
  }
  std::string ptx(p, '\0');
  if (get_ptx(prog, ptx.data()) != NVRTC_SUCCESS) return r;
  ptx.resize(std::char_traits<char>::length(ptx.c_str()));  // text up to its terminator
  remember(std::string(cubin, n), std::move(ptx));
  return r;
}
