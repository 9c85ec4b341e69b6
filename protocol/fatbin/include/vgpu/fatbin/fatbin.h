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
#include <span>
#include <string>
#include <string_view>
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
};
std::string_view error_name(Error e);

inline constexpr uint64_t kMaxImageBytes = 1ull << 30;        // 1 GiB decompressed, per entry
inline constexpr uint32_t kMaxParams = 4096;                  // CUDA allows 32764 bytes of params
inline constexpr uint32_t kMaxParamBytes = 32764;

struct Param {
  uint32_t offset = 0;  // byte offset in the packed parameter buffer
  uint32_t size = 0;    // bytes
};

struct Kernel {
  std::string name;           // mangled device name, e.g. _Z5saxpyfPKfPfi
  std::vector<Param> params;  // in declaration order
  uint32_t param_bytes = 0;   // total size of the packed buffer (end of the last param)
};

struct Variable {
  std::string name;           // device name as in the ELF symbol table
  uint64_t size = 0;
  bool constant = false;      // __constant__ (else __device__)
  std::vector<uint8_t> init;  // initial bytes; empty means zero-filled
};

struct Module {
  std::vector<Kernel> kernels;
  std::vector<Variable> variables;

  const Kernel* find_kernel(std::string_view name) const;
  const Variable* find_variable(std::string_view name) const;
};

// The fat binary that a registration wrapper (the pointer passed to
// __cudaRegisterFatBinary: {magic 0x466243b1, version, data, ...}) points at,
// as a span of its exact size. For the guest only: it follows pointers in the
// calling process's own memory.
Error locate(const void* wrapper, std::span<const uint8_t>* out);

// Parses fat binary bytes (magic 0xBA55ED50) into kernels and variables.
// Safe on arbitrary input: never reads outside `bytes`, never allocates more
// than the bounds above.
Error parse(std::span<const uint8_t> bytes, Module* out);

}  // namespace vgpu::fatbin
