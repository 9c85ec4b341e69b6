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

const SectionInfo* CubinMap::find(std::string_view name) const {
  for (const SectionInfo& s : sections) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

CubinMap map_cubin(const std::vector<uint8_t>& fatbin) {
  CubinMap c;
  for (const EntryInfo& e : list_entries(fatbin)) {
    if (c.base == 0 && e.kind == 2 && (e.flags & 0xA000) == 0) {
      c.base = e.payload();
      c.size = e.size;
    }
  }
  if (c.base == 0) throw std::runtime_error("no raw cubin");
  const uint64_t shoff = get_le(fatbin, c.base + 0x28, 8);
  const uint64_t shnum = get_le(fatbin, c.base + 0x3c, 2);
  const uint64_t shstrndx = get_le(fatbin, c.base + 0x3e, 2);
  for (uint64_t i = 0; i < shnum; ++i) {
    SectionInfo s;
    s.header = c.base + shoff + 64 * i;
    s.type = static_cast<uint32_t>(get_le(fatbin, s.header + 4, 4));
    s.offset = get_le(fatbin, s.header + 24, 8);
    s.size = get_le(fatbin, s.header + 32, 8);
    s.link = static_cast<uint32_t>(get_le(fatbin, s.header + 40, 4));
    c.sections.push_back(s);
  }
  const uint64_t names = c.base + c.sections.at(shstrndx).offset;
  for (SectionInfo& s : c.sections) {
    for (size_t at = names + get_le(fatbin, s.header, 4); fatbin.at(at) != 0; ++at) s.name += static_cast<char>(fatbin[at]);
  }
  return c;
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

bool same_module(const Module& a, const Module& b) {
  if (a.kernels.size() != b.kernels.size() || a.variables.size() != b.variables.size()) return false;
  for (const Kernel& k : a.kernels) {
    const Kernel* o = b.find_kernel(k.name);
    if (!o || o->param_bytes != k.param_bytes || o->params.size() != k.params.size()) return false;
    for (size_t i = 0; i < k.params.size(); ++i) {
      if (o->params[i].offset != k.params[i].offset || o->params[i].size != k.params[i].size) return false;
    }
  }
  for (const Variable& v : a.variables) {
    const Variable* o = b.find_variable(v.name);
    if (!o || o->size != v.size || o->constant != v.constant || o->init != v.init) return false;
  }
  return true;
}

}  // namespace vgpu::fatbin::test
