// A small reader for what the programs test needs from binaries built by nvcc,
// independent of the project's own fat binary parser (so it can check it):
// an executable's DT_NEEDED entries and .nv_fatbin section, the cubins inside
// the fat binaries, and each cubin's kernels (with their parameter layout
// from .nv.info) and variables. For trusted test inputs: it checks bounds and
// throws std::runtime_error on anything malformed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cuda_elf {

struct Param {
  uint32_t ordinal = 0, offset = 0, size = 0;
};

struct Kernel {
  std::string name;           // mangled
  std::vector<Param> params;  // sorted by ordinal
  uint32_t param_bytes = 0;   // EIATTR_CBANK_PARAM_SIZE
};

struct Variable {
  std::string name;  // as in the cubin's symbol table
  uint64_t size = 0;
  std::string section;        // .nv.constant3, .nv.global, .nv.global.init, ...
  std::vector<uint8_t> init;  // initial bytes; empty if the section has none (zero-filled)
};

struct Cubin {
  std::vector<Kernel> kernels;
  std::vector<Variable> variables;
};

struct Program {
  std::vector<std::string> needed;  // DT_NEEDED
  bool has_fatbin = false;          // a .nv_fatbin section
  std::vector<Cubin> cubins;        // every ELF entry of every fat binary in it
};

std::vector<uint8_t> read_file(const std::string& path);

// An x86-64 executable or shared library built by nvcc.
Program read_program(const std::string& path);

// One cubin (device ELF).
Cubin read_cubin(const std::vector<uint8_t>& bytes);

// Defined dynamic symbols of a shared library (its .dynsym).
std::vector<std::string> dynamic_symbols(const std::string& path);

}  // namespace cuda_elf
