// What the sim texture sampler's tests share: resources in a test's own
// memory, laid out as vgpu/executor/texture.h says (arrays' rows padded), and
// reads through sim::texture_read.
#pragma once

#include "texture_sampler.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>

using vgpu::executor::TextureDesc;
namespace sim = vgpu::executor::sim;
using Address = TextureDesc::Address;
using Filter = TextureDesc::Filter;
using Format = TextureDesc::Format;
using Resource = TextureDesc::Resource;

namespace texture_test {

// A resource's bytes in a heap block of exactly its size, so AddressSanitizer
// catches any read past it (an array's dense rows: laid_out below pads them
// into a block of exactly resource_bytes).
template <class T>
inline std::vector<uint8_t> bytes(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// What fills an array row's padding, so a read of padding shows.
constexpr uint8_t kPad = 0xEE;

inline bool is_array(const TextureDesc& d) {
  return d.resource == Resource::kArray || d.resource == Resource::kMipmapped;
}

// Walks an array resource's rows as the header lays them out, computed here
// from the header's description: each level (one for kArray) is
// max(1, w >> l) elements x max(1, h >> l) rows x (layered or cubemap ? depth
// : max(1, depth >> l)) slices, a 0 dimension counting as 1. Calls
// f(dense offset, laid-out offset, row bytes) for each row, where the dense
// layout has rows back to back and levels back to back; returns the dense
// layout's size. Checks the laid-out rows are row_pitch apart and fill
// exactly resource_bytes.
template <class F>
inline uint64_t for_each_row(const TextureDesc& d, F&& f) {
  namespace ex = vgpu::executor;
  const auto one = [](uint64_t v) { return std::max<uint64_t>(1, v); };
  const bool keeps_depth = d.array_flags & (TextureDesc::kLayered | TextureDesc::kCubemap);
  const uint32_t levels = d.resource == Resource::kMipmapped ? d.levels : 1;
  uint64_t dense = 0, padded = 0;
  for (uint32_t l = 0; l < levels; ++l) {
    const uint64_t row = one(one(d.width) >> l) * ex::element_bytes(d);
    const uint64_t rows = one(one(d.height) >> l) * (keeps_depth ? one(d.depth) : one(one(d.depth) >> l));
    const uint64_t pitch = ex::row_pitch(d, l);
    REQUIRE(pitch >= row);
    REQUIRE(pitch % ex::kArrayRowAlignment == 0);
    REQUIRE(padded == ex::level_offset(d, l));
    for (uint64_t r = 0; r < rows; ++r) f(dense + r * row, padded + r * pitch, row);
    dense += rows * row;
    padded += rows * pitch;
  }
  REQUIRE(padded == ex::resource_bytes(d));
  return dense;
}

inline uint64_t dense_bytes(const TextureDesc& d) {
  return for_each_row(d, [](uint64_t, uint64_t, uint64_t) {});
}

// An array resource's dense bytes (see for_each_row) laid out as the header
// says, in a buffer of exactly resource_bytes with kPad in each row's padding;
// any other resource's bytes as they are (their layout is already the
// header's).
inline std::vector<uint8_t> laid_out(const TextureDesc& d, const std::vector<uint8_t>& dense) {
  if (!is_array(d)) return dense;
  REQUIRE(dense.size() == dense_bytes(d));
  std::vector<uint8_t> out(vgpu::executor::resource_bytes(d), kPad);
  for_each_row(d, [&](uint64_t from, uint64_t to, uint64_t n) { std::memcpy(out.data() + to, dense.data() + from, n); });
  return out;
}

// The inverse: an array resource's rows, back to back.
inline std::vector<uint8_t> dense_of(const TextureDesc& d, const std::vector<uint8_t>& mem) {
  if (!is_array(d)) return mem;
  REQUIRE(mem.size() == vgpu::executor::resource_bytes(d));
  std::vector<uint8_t> out(dense_bytes(d));
  for_each_row(d, [&](uint64_t to, uint64_t from, uint64_t n) { std::memcpy(out.data() + to, mem.data() + from, n); });
  return out;
}

// True when every byte of an array resource outside its rows is still kPad.
inline bool padding_intact(const TextureDesc& d, const std::vector<uint8_t>& mem) {
  std::vector<uint8_t> m = mem;
  for_each_row(d, [&](uint64_t, uint64_t at, uint64_t n) { std::memset(m.data() + at, kPad, n); });
  return std::all_of(m.begin(), m.end(), [](uint8_t b) { return b == kPad; });
}

inline std::vector<float> iota(size_t n, float first) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = first + static_cast<float>(i);
  return v;
}

inline TextureDesc array(Format f, uint64_t w, uint64_t h = 0, uint64_t depth = 0, uint32_t channels = 1) {
  TextureDesc d;
  d.resource = Resource::kArray;
  d.format = f;
  d.channels = channels;
  d.width = w, d.height = h, d.depth = depth;
  return d;
}

inline void set_address(TextureDesc& d, Address a) { d.address[0] = d.address[1] = d.address[2] = a; }

// texture_read's floats over `dense` laid out as the header says (laid_out);
// the unused channels keep a sentinel.
inline std::array<float, 4> read(const TextureDesc& d, const std::vector<uint8_t>& dense, float x, float y = 0,
                          float z = 0, int layer = 0, float lod = 0) {
  const auto mem = laid_out(d, dense);
  REQUIRE(mem.size() == vgpu::executor::resource_bytes(d));  // the test's layout is the header's
  const float coord[3] = {x, y, z};
  std::array<float, 4> out;
  out.fill(-12345);
  REQUIRE(sim::texture_read(d, mem.data(), coord, layer, lod, out.data()) == 0);
  return out;
}
inline float read1(const TextureDesc& d, const std::vector<uint8_t>& dense, float x, float y = 0, float z = 0,
            int layer = 0, float lod = 0) {
  return read(d, dense, x, y, z, layer, lod)[0];
}

}  // namespace texture_test

using namespace texture_test;
