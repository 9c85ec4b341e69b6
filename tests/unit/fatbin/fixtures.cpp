#include "fixtures.h"

#include <fstream>
#include <iterator>
#include <stdexcept>

namespace vgpu::fatbin::test {

std::vector<uint8_t> load_fixture(const std::string& name) {
  const std::string path = std::string(VGPU_FATBIN_FIXTURES) + "/" + name + ".fatbin";
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("missing fixture " + path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

uint64_t get_le(const std::vector<uint8_t>& b, size_t off, size_t width) {
  uint64_t v = 0;
  for (size_t i = 0; i < width; ++i) v |= uint64_t{b.at(off + i)} << (8 * i);
  return v;
}

void put_le(std::vector<uint8_t>* b, size_t off, size_t width, uint64_t v) {
  for (size_t i = 0; i < width; ++i) b->at(off + i) = static_cast<uint8_t>(v >> (8 * i));
}

std::vector<EntryInfo> list_entries(const std::vector<uint8_t>& fatbin) {
  std::vector<EntryInfo> out;
  const size_t end = 16 + get_le(fatbin, 8, 8);
  for (size_t off = 16; off < end;) {
    EntryInfo e;
    e.header = off;
    e.kind = static_cast<uint16_t>(get_le(fatbin, off, 2));
    e.header_size = static_cast<uint32_t>(get_le(fatbin, off + 4, 4));
    e.size = get_le(fatbin, off + 8, 8);
    e.flags = get_le(fatbin, off + 40, 8);
    out.push_back(e);
    off += e.header_size + e.size;
  }
  return out;
}

std::vector<uint8_t> make_fatbin(const std::vector<EntrySpec>& entries) {
  std::vector<uint8_t> b(16);
  put_le(&b, 0, 4, 0xBA55ED50);
  put_le(&b, 4, 2, 1);
  put_le(&b, 6, 2, 16);
  for (const EntrySpec& e : entries) {
    const size_t at = b.size();
    b.resize(at + 64);
    put_le(&b, at + 0, 2, e.kind);
    put_le(&b, at + 2, 2, 0x101);
    put_le(&b, at + 4, 4, 64);
    put_le(&b, at + 8, 8, e.payload.size());
    put_le(&b, at + 28, 4, 90);
    put_le(&b, at + 40, 8, 0x11);
    b.insert(b.end(), e.payload.begin(), e.payload.end());
  }
  put_le(&b, 8, 8, b.size() - 16);
  return b;
}

std::vector<uint8_t> ptx_fatbin(std::string_view ptx) {
  return make_fatbin({EntrySpec{1, std::vector<uint8_t>(ptx.begin(), ptx.end())}});
}

}  // namespace vgpu::fatbin::test
