// Fat binaries as nvcc embeds them, and what vgpu needs from them: each
// kernel's parameter layout and each device variable's size and initial bytes.
//
// Used on both sides: the guest library parses the images its program
// registers (trusted memory) to pack kernel arguments; the host parses the same
// bytes again (untrusted: every offset, size and count is bounds-checked) and
// trusts only its own result. Layouts come from a cubin's .nv.info first and
// from the PTX .entry declarations second; zstd and LZ4 entries are
// decompressed (with a bound on the decompressed size).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace vgpu::fatbin {

enum class Error {
  kNone = 0,
  kTruncated,        // a size or offset points past the end of the bytes
  kBadMagic,         // not a fat binary (or not a registration wrapper)
  kBadVersion,       // a version this parser does not know
  kBadEntry,         // an entry header is inconsistent
  kDecompress,       // a compressed entry failed to decompress
  kTooLarge,         // a size exceeds the parser's bounds (kMaxImageBytes etc.)
  kBadElf,           // a cubin's ELF structure is malformed
  kBadPtx,           // a PTX .entry could not be parsed
  kNoKernelMetadata, // neither a cubin with .nv.info nor PTX was found
  kConflict,         // two images of one fat binary disagree on a kernel layout or variable
};
std::string_view error_name(Error e);

inline constexpr uint64_t kMaxImageBytes = 1ull << 30;        // 1 GiB decompressed, per entry
inline constexpr uint64_t kMaxTotalImageBytes = 4ull << 30;   // all entries of one fat binary
inline constexpr uint32_t kMaxParams = 4096;                  // CUDA allows 32764 bytes of params
inline constexpr uint32_t kMaxParamBytes = 32764;
// Blocks in one thread block cluster: 8 portably, 16 where a kernel allows a
// non-portable size (sm_90).
inline constexpr uint32_t kMaxPortableClusterBlocks = 8;
inline constexpr uint32_t kMaxClusterBlocks = 16;
// The largest __launch_bounds__ thread count kept (a block has at most 1024,
// so anything above bounds nothing).
inline constexpr uint32_t kMaxThreadBound = 1u << 20;
// A cluster shape: each dimension at least 1, at most kMaxClusterBlocks blocks in all.
inline bool valid_cluster(const uint32_t dims[3]) {
  if (dims[0] == 0 || dims[1] == 0 || dims[2] == 0) return false;
  return uint64_t{dims[0]} * dims[1] * dims[2] <= kMaxClusterBlocks;
}

struct Param {
  uint32_t offset = 0;  // byte offset in the packed parameter buffer
  uint32_t size = 0;    // bytes
};

struct Kernel {
  std::string name;           // mangled device name, e.g. _Z5saxpyfPKfPfi
  std::vector<Param> params;  // in declaration order
  uint32_t param_bytes = 0;   // total size of the packed buffer (end of the last param)
  // Thread block cluster dimensions fixed at compile time (__cluster_dims__:
  // the cubin's EIATTR_CTA_PER_CLUSTER, PTX's .reqnctapercluster); all 0
  // when the kernel has none and its launch chooses.
  uint32_t cluster[3] = {0, 0, 0};
  // Most threads a block of it may have (__launch_bounds__: the cubin's
  // EIATTR_MAX_THREADS, PTX's .maxntid or .reqntid); 0 when the kernel sets
  // none and the device's limit applies. Taken from the lowest-architecture
  // PTX that describes the kernel (what ptx_text() returns, the code a host
  // without the GPU runs), else from its first cubin: libraries tune it per
  // architecture.
  uint32_t max_threads = 0;
};

struct Variable {
  std::string name;           // device name as in the ELF symbol table
  uint64_t size = 0;
  bool constant = false;      // __constant__ (else __device__)
  bool managed = false;       // __managed__: the CPU reaches it at the same address
  std::vector<uint8_t> init;  // initial bytes; empty means zero-filled, else exactly `size` bytes
};

// Names to their index in a Module's vectors (looked up by string_view).
struct NameHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using NameIndex = std::unordered_map<std::string, size_t, NameHash, std::equal_to<>>;

struct Module {
  std::vector<Kernel> kernels;
  std::vector<Variable> variables;
  // Some kernel calls device printf or assert (the image references vprintf
  // or __assertfail): what they print must be collected for the program.
  bool calls_printf = false;
  // The architectures its images were built for (75 for sm_75 and for
  // compute_75), ascending, once each: what a device chooses from
  // (choose_image).
  std::vector<uint32_t> cubin_archs;
  std::vector<uint32_t> ptx_archs;
  // Filled by parse(), so a lookup costs the same in a module of a hundred
  // thousand kernels as in one of three. A Module built by hand (tests) has
  // none and is searched in order.
  NameIndex kernel_index;
  NameIndex variable_index;

  const Kernel* find_kernel(std::string_view name) const;
  const Variable* find_variable(std::string_view name) const;
};

// What a device of compute capability `cc` (major * 10 + minor) runs from
// module `m`, as NVIDIA's driver chooses: the cubin of the same major version
// with the highest minor version no higher than the device's; else the PTX of
// the highest architecture no higher than cc, compiled for the device then.
// cudaFuncGetAttributes reports the choice (ptxVersion, binaryVersion), and
// libraries pick their code paths by it (CUB's PtxVersion).
struct ImageChoice {
  uint32_t ptx_version = 0;     // the virtual architecture the code came from
  uint32_t binary_version = 0;  // the architecture of the code that runs
};
// False when no image can run on such a device.
bool choose_image(const Module& m, uint32_t cc, ImageChoice* out);

// The bytes of host memory a parsed module holds (its vectors, names,
// parameters, initial values and indexes): what a host charges the tenant
// that loaded it.
uint64_t host_bytes(const Module& m);

// The bytes a fat binary occupies as its header announces them (what parse()
// reads; bytes after them are ignored): at most bytes.size(), and
// bytes.size() when the header cannot be read.
uint64_t announced_size(std::span<const uint8_t> bytes);

// The fat binary that a registration wrapper (the pointer passed to
// __cudaRegisterFatBinary: {magic 0x466243b1, version, data, ...}) points at,
// as a span of its exact size. For the guest only: it follows pointers in the
// calling process's own memory.
//
// Version 1 (whole-program compilation): `data` is the object's fat binary.
// Version 2 (nvcc -rdc=true, from the device-link stub): `data` is the fat
// binary nvlink produced (the linked cubins, no PTX); this is what locate()
// returns. When every object carried only PTX it is an empty fat binary (no
// entries) and parse() answers kNoKernelMetadata: the kernels are then in the
// per-object images, see locate_prelinked().
Error locate(const void* wrapper, std::span<const uint8_t>* out);

// Version 2 wrappers only: the fourth field is a NULL-terminated array of the
// per-object ("prelinked", relocatable) fat binaries, which the runtime JIT-links
// when the linked image has no code for the device. The device-link stub fills
// it just before it calls __cudaRegisterFatBinary. Returns their spans in array
// order (at most kMaxPrelinked); an empty list for a version 1 wrapper.
inline constexpr size_t kMaxPrelinked = 65536;
Error locate_prelinked(const void* wrapper, std::vector<std::span<const uint8_t>>* out);

// Parses fat binary bytes (magic 0xBA55ED50) into kernels and variables.
// Safe on arbitrary input: never reads outside `bytes`, never allocates more
// than the bounds above. Cubins are read first, then PTX images; a kernel or
// variable described by several images keeps the first description, and the
// others must agree with it (else kConflict). Bytes after the announced size are ignored.
// *out is written only on success. The format is in protocol/fatbin/FORMAT.md.
//
// `limits` bounds the work one fat binary may cost: the image bytes of all
// its entries together (decompressed), checked against each entry's
// announced size before it is decompressed.
struct Limits {
  uint64_t max_total_image_bytes = kMaxTotalImageBytes;
};
Error parse(std::span<const uint8_t> bytes, Module* out, const Limits& limits = {});

// The PTX text of the fat binary's PTX entry of the lowest architecture
// (decompressed, up to its NUL): what a host without the GPU interprets.
// Several entries of that architecture (the objects of a program built with
// -rdc=true) come one after another, each ended by a NUL but the last.
// kNoKernelMetadata when it carries no PTX; kTooLarge past `max_bytes` in all.
// Safe on arbitrary input, as parse().
Error ptx_text(std::span<const uint8_t> bytes, uint64_t max_bytes, std::string* out);

}  // namespace vgpu::fatbin
