// Collects kernels and variables from every image of a fat binary into one
// Module. The first image to describe a name wins; a later image that
// describes it differently is a conflict (a guest could otherwise make the
// host check arguments against one layout while the GPU runs another).
// Everything the module will hold is charged against a byte budget first.
#pragma once

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "bytes.h"
#include "vgpu/fatbin/fatbin.h"

namespace vgpu::fatbin::detail {

// Architectures a module remembers (real ones are 2-digit and 3-digit SM numbers).
inline constexpr uint32_t kMaxArch = 999;
inline constexpr size_t kMaxArchs = 64;

// Bytes of names, parameters and initial values one module may hold.
inline constexpr uint64_t kMaxModuleBytes = kMaxImageBytes;

class ModuleBuilder {
 public:
  // Reserves `bytes` of the budget; kTooLarge when it is spent.
  Error charge(uint64_t bytes);

  // The images that follow are PTX of architecture `arch` (0: cubins).
  void reading_ptx(uint32_t arch) { ptx_arch_ = arch; }
  // A kernel's thread bound comes from the PTX of the lowest architecture
  // that describes it, else from its first cubin: a host without the GPU runs
  // that PTX, and libraries tune the bound per architecture (cuSPARSE's SpMV:
  // 512 threads in its sm_90 cubin, 128 in its compute_120 PTX).
  Error add_kernel(Kernel k);
  // A variable of a name already held must agree with it (kConflict), except
  // a file-local one (`local`): nvlink merges each object's locals (printf's
  // `$str` format strings, statics) into one image, and one name may then
  // stand for several; the first is kept, as a lookup by name can mean only one.
  Error add_variable(Variable v, bool local = false);

  void calls_printf() { module_.calls_printf = true; }
  // An image for architecture `arch` (a cubin, else PTX) was read. Bounded:
  // a hostile fat binary of many entries must not make this quadratic.
  void add_arch(bool cubin, uint32_t arch) {
    std::vector<uint32_t>& archs = cubin ? module_.cubin_archs : module_.ptx_archs;
    if (arch == 0 || arch > kMaxArch || archs.size() >= kMaxArchs) return;
    const auto at = std::lower_bound(archs.begin(), archs.end(), arch);
    if (at == archs.end() || *at != arch) archs.insert(at, arch);
  }
  // The module, with the name indexes built on the way.
  Module take() {
    module_.kernel_index = std::move(kernels_);
    module_.variable_index = std::move(variables_);
    return std::move(module_);
  }

 private:
  Module module_;
  NameIndex kernels_;    // name -> index in module_.kernels
  NameIndex variables_;  // name -> index in module_.variables
  uint64_t used_ = 0;
  uint32_t ptx_arch_ = 0;
  std::vector<uint32_t> bound_arch_;  // per kernel: the PTX arch its max_threads came from, or 0
};

}  // namespace vgpu::fatbin::detail
