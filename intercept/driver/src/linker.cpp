// The JIT linker (cuLinkCreate, cuLinkAddData/File, cuLinkComplete), for
// what programs such as NVIDIA's ptxjit sample do with it: link one image
// (PTX, a cubin or a fat binary) and load the result. The output is that
// image as a fat binary, which cuModuleLoadData takes and the host compiles
// or loads as it does any module. Linking several images together needs a
// device linker the guest does not have: refused by name, as are device
// libraries, objects and LTO inputs.
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "driver_state.h"

using namespace vgpu;
using namespace vgpu::driver;

namespace {

struct LinkState {
  std::vector<uint8_t> image;  // the one input, as a fat binary
  int inputs = 0;
  // What cuLinkCreate asked to be told: its log buffers, filled (empty) at completion.
  std::vector<std::pair<CUjit_option, void*>> options;
};

// Leaked with the process, like the driver's own.
std::mutex& link_mutex() {
  static auto* mu = new std::mutex;
  return *mu;
}
std::unordered_set<const LinkState*>& live_states() {
  static auto* s = new std::unordered_set<const LinkState*>;
  return *s;
}

LinkState* state_of(CUlinkState handle) {
  std::lock_guard lock(link_mutex());
  auto* s = reinterpret_cast<LinkState*>(handle);
  return live_states().count(s) ? s : nullptr;
}

CUresult add_image(LinkState* s, CUjitInputType type, std::vector<char> bytes) {
  switch (type) {
    case CU_JIT_INPUT_CUBIN:
    case CU_JIT_INPUT_PTX:
    case CU_JIT_INPUT_FATBINARY:
      break;
    case CU_JIT_INPUT_LIBRARY:
      return refuse("cuLinkAddData of a device library (relocatable device code)");
    case CU_JIT_INPUT_OBJECT:
      return refuse("cuLinkAddData of a host object with device code");
    default:
      return refuse("cuLinkAddData of LTO or NVVM input");
  }
  if (s->inputs > 0) return refuse("linking more than one image (a second cuLinkAddData)");
  bytes.push_back('\0');  // PTX may come without its terminator
  std::vector<uint8_t> fat;
  if (CUresult r = image_to_fatbin(bytes.data(), &fat); r != CUDA_SUCCESS) return r;
  s->image = std::move(fat);
  s->inputs = 1;
  return CUDA_SUCCESS;
}

// The log buffers the program gave are left holding an empty log.
void write_logs(const LinkState& s) {
  size_t info_size = 0, error_size = 0;
  for (const auto& [opt, value] : s.options) {
    if (opt == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES) info_size = reinterpret_cast<uintptr_t>(value);
    if (opt == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) error_size = reinterpret_cast<uintptr_t>(value);
  }
  for (const auto& [opt, value] : s.options) {
    if (opt == CU_JIT_INFO_LOG_BUFFER && value && info_size > 0) static_cast<char*>(value)[0] = '\0';
    if (opt == CU_JIT_ERROR_LOG_BUFFER && value && error_size > 0) static_cast<char*>(value)[0] = '\0';
  }
}

}  // namespace

extern "C" {

CUresult cuLinkCreate_v2(unsigned count, CUjit_option* options, void** values, CUlinkState* out) {
  if (!out || (count > 0 && (!options || !values))) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  auto* s = new LinkState;
  for (unsigned i = 0; i < count; ++i) s->options.emplace_back(options[i], values[i]);
  std::lock_guard lock(link_mutex());
  live_states().insert(s);
  *out = reinterpret_cast<CUlinkState>(s);
  return CUDA_SUCCESS;
}

CUresult cuLinkAddData_v2(CUlinkState handle, CUjitInputType type, void* data, size_t size, const char*,
                          unsigned, CUjit_option*, void**) {
  LinkState* s = state_of(handle);
  if (!s || !data || size == 0) return CUDA_ERROR_INVALID_VALUE;
  const auto* p = static_cast<const char*>(data);
  return add_image(s, type, std::vector<char>(p, p + size));
}

CUresult cuLinkAddFile_v2(CUlinkState handle, CUjitInputType type, const char* path, unsigned,
                          CUjit_option*, void**) {
  LinkState* s = state_of(handle);
  if (!s || !path) return CUDA_ERROR_INVALID_VALUE;
  std::ifstream in(path, std::ios::binary);
  if (!in) return CUDA_ERROR_FILE_NOT_FOUND;
  return add_image(s, type, std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()));
}

CUresult cuLinkComplete(CUlinkState handle, void** out, size_t* size) {
  LinkState* s = state_of(handle);
  if (!s || !out || !size) return CUDA_ERROR_INVALID_VALUE;
  if (s->inputs != 1) return CUDA_ERROR_INVALID_VALUE;  // nothing to link
  write_logs(*s);
  *out = s->image.data();  // owned by the link state, as CUDA's output is
  *size = s->image.size();
  return CUDA_SUCCESS;
}

CUresult cuLinkDestroy(CUlinkState handle) {
  LinkState* s = state_of(handle);
  if (!s) return CUDA_ERROR_INVALID_VALUE;
  {
    std::lock_guard lock(link_mutex());
    live_states().erase(s);
  }
  delete s;
  return CUDA_SUCCESS;
}

}  // extern "C"
