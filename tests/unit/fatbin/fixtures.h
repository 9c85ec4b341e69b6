// Test helpers: the fixtures CMake builds with nvcc, a writer for synthetic
// fat binaries, and a reader of the container written independently of the
// parser (to find the fields the tests mutate).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/fatbin/fatbin.h"

namespace vgpu::fatbin::test {

// fixtures/<name>.fatbin from the build tree.
std::vector<uint8_t> load_fixture(const std::string& name);

// Fixtures of layouts.cu with both a cubin and PTX, one per compression mode.
inline const std::vector<std::string> kModeFixtures = {"default", "size",        "speed",
                                                       "balance", "none",        "no_compress"};
// Fixtures with only PTX.
inline const std::vector<std::string> kPtxFixtures = {"ptx_only", "ptx_only_none", "ptx_only_speed"};

// Where one entry of a fat binary lies.
struct EntryInfo {
  size_t header = 0;        // offset of the entry header in the fat binary
  uint16_t kind = 0;
  uint32_t header_size = 0;
  uint64_t size = 0;        // payload bytes
  uint64_t flags = 0;
  size_t payload() const { return header + header_size; }
};
std::vector<EntryInfo> list_entries(const std::vector<uint8_t>& fatbin);

// The first raw cubin of a fat binary, and where its ELF structures lie.
struct SectionInfo {
  size_t header = 0;  // offset of its section header in the fat binary
  std::string name;
  uint32_t type = 0;
  uint64_t offset = 0, size = 0;  // in the ELF image
  uint32_t link = 0;
};
struct CubinMap {
  size_t base = 0;  // offset of the ELF image in the fat binary
  uint64_t size = 0;
  std::vector<SectionInfo> sections;
  const SectionInfo* find(std::string_view name) const;
};
CubinMap map_cubin(const std::vector<uint8_t>& fatbin);

// A fat binary of uncompressed entries (flags 0x11: 64-bit, Linux).
struct EntrySpec {
  uint16_t kind = 1;
  std::vector<uint8_t> payload;
};
std::vector<uint8_t> make_fatbin(const std::vector<EntrySpec>& entries);
std::vector<uint8_t> ptx_fatbin(std::string_view ptx);

// Same kernels (layouts) and variables (sizes, kinds, initial bytes), in any order.
bool same_module(const Module& a, const Module& b);

// Little-endian field access on byte vectors (the caller keeps offsets in range).
uint64_t get_le(const std::vector<uint8_t>& b, size_t off, size_t width);
void put_le(std::vector<uint8_t>* b, size_t off, size_t width, uint64_t v);

}  // namespace vgpu::fatbin::test
