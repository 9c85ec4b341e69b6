// The sim worker's surface loads and stores: surf*read/surf*write with
// each boundary mode, on arrays laid out as texture.h says.
#include "texture_test_support.h"

namespace {

TextureDesc surface(uint64_t w, uint64_t h, uint64_t depth = 0, uint32_t flags = 0) {
  TextureDesc d = array(Format::kUint32, w, h, depth);
  d.object = TextureDesc::Object::kSurface;
  d.array_flags = TextureDesc::kSurfaceLoadStore | flags;
  return d;
}

std::vector<uint32_t> words(const std::vector<uint8_t>& b) {
  std::vector<uint32_t> w(b.size() / 4);
  std::memcpy(w.data(), b.data(), b.size());
  return w;
}

}  // namespace

TEST_CASE("surface: reads and writes in range, x in bytes") {
  const auto d = surface(4, 3);  // 4 x uint32 per row, 3 rows
  auto mem = laid_out(d, bytes(std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  REQUIRE(mem.size() == vgpu::executor::resource_bytes(d));
  uint32_t v = 0;
  REQUIRE(sim::surface_read(d, mem.data(), 4, 1, 0, &v, 4, sim::kBoundaryTrap) == 0);
  CHECK(v == 5);
  uint32_t two[2] = {};
  REQUIRE(sim::surface_read(d, mem.data(), 8, 0, 0, two, 8, sim::kBoundaryTrap) == 0);
  CHECK((two[0] == 2 && two[1] == 3));
  uint8_t b = 0;
  REQUIRE(sim::surface_read(d, mem.data(), 13, 2, 0, &b, 1, sim::kBoundaryTrap) == 0);
  CHECK(b == 0);  // byte 1 of element 11 (little endian)
  const uint32_t w = 0xabcd;
  REQUIRE(sim::surface_write(d, mem.data(), &w, 4, 8, 2, 0, sim::kBoundaryTrap) == 0);
  CHECK(words(dense_of(d, mem))[10] == 0xabcd);

  // Misaligned or odd sizes fail in every mode.
  for (int mode : {sim::kBoundaryZero, sim::kBoundaryClamp, sim::kBoundaryTrap}) {
    CHECK(sim::surface_read(d, mem.data(), 2, 0, 0, &v, 4, mode) == -1);
    CHECK(sim::surface_read(d, mem.data(), 4, 0, 0, two, 8, mode) == -1);
    CHECK(sim::surface_read(d, mem.data(), 0, 0, 0, &v, 3, mode) == -1);
  }
  CHECK(sim::surface_read(d, mem.data(), 0, 0, 0, &v, 4, 3) == -1);  // no such mode
}

TEST_CASE("surface: trap refuses an access outside and moves nothing") {
  const auto d = surface(4, 3);
  auto mem = laid_out(d, bytes(iota(12, 0)));
  const auto before = mem;
  for (auto [x, y] : {std::pair<long long, long long>{16, 0}, {-4, 0}, {0, 3}, {0, -1}}) {
    INFO("x " << x << " y " << y);
    uint32_t v = 0xdeadbeef;
    CHECK(sim::surface_read(d, mem.data(), x, y, 0, &v, 4, sim::kBoundaryTrap) == -1);
    CHECK(v == 0xdeadbeef);
    const uint32_t w = 1;
    CHECK(sim::surface_write(d, mem.data(), &w, 4, x, y, 0, sim::kBoundaryTrap) == -1);
    CHECK(mem == before);
  }
  uint64_t pair = 0;  // 8 bytes at x = 8 end the row; at 16 they do not
  CHECK(sim::surface_read(d, mem.data(), 16, 0, 0, &pair, 8, sim::kBoundaryTrap) == -1);
  uint32_t v = 0;  // z is out of range for a 2D surface
  CHECK(sim::surface_read(d, mem.data(), 0, 0, 1, &v, 4, sim::kBoundaryTrap) == -1);
}

TEST_CASE("surface: clamp moves the nearest access inside") {
  const auto d = surface(4, 3);
  auto mem = laid_out(d, bytes(std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  uint32_t v = 0;
  REQUIRE(sim::surface_read(d, mem.data(), 100, 1, 0, &v, 4, sim::kBoundaryClamp) == 0);
  CHECK(v == 7);
  REQUIRE(sim::surface_read(d, mem.data(), -8, 9, 0, &v, 4, sim::kBoundaryClamp) == 0);
  CHECK(v == 8);
  uint32_t two[2] = {};
  REQUIRE(sim::surface_read(d, mem.data(), 40, 0, 0, two, 8, sim::kBoundaryClamp) == 0);
  CHECK((two[0] == 2 && two[1] == 3));
  const uint32_t w = 99;
  REQUIRE(sim::surface_write(d, mem.data(), &w, 4, -4, -1, 0, sim::kBoundaryClamp) == 0);
  CHECK(words(dense_of(d, mem))[0] == 99);
  REQUIRE(sim::surface_write(d, mem.data(), &w, 4, 16, 5, 3, sim::kBoundaryClamp) == 0);
  CHECK(words(dense_of(d, mem))[11] == 99);
  const auto narrow = surface(1, 2);  // 8 bytes cannot fit in a 4-byte row: no place to clamp to
  const auto mn = laid_out(narrow, bytes(std::vector<uint32_t>{0, 1}));
  uint64_t wide = 0;
  CHECK(sim::surface_read(narrow, mn.data(), 0, 0, 0, &wide, 8, sim::kBoundaryClamp) == -1);
}

TEST_CASE("surface: zero mode reads zeros and drops writes outside") {
  const auto d = surface(4, 3);
  auto mem = laid_out(d, bytes(std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  const auto before = mem;
  uint32_t v = 0xdeadbeef;
  REQUIRE(sim::surface_read(d, mem.data(), 16, 0, 0, &v, 4, sim::kBoundaryZero) == 0);
  CHECK(v == 0);
  v = 0xdeadbeef;
  REQUIRE(sim::surface_read(d, mem.data(), 0, -1, 0, &v, 4, sim::kBoundaryZero) == 0);
  CHECK(v == 0);
  const uint32_t w = 99;
  REQUIRE(sim::surface_write(d, mem.data(), &w, 4, 16, 0, 0, sim::kBoundaryZero) == 0);
  REQUIRE(sim::surface_write(d, mem.data(), &w, 4, 0, 3, 0, sim::kBoundaryZero) == 0);
  CHECK(mem == before);
  REQUIRE(sim::surface_read(d, mem.data(), 12, 2, 0, &v, 4, sim::kBoundaryZero) == 0);
  CHECK(v == 11);  // inside, the mode changes nothing
}

TEST_CASE("surface: layered and 3D surfaces take z") {
  const auto layered = surface(2, 2, 3, TextureDesc::kLayered);
  auto mem = laid_out(layered, bytes(std::vector<uint32_t>(12)));
  const uint32_t w = 42;
  REQUIRE(sim::surface_write(layered, mem.data(), &w, 4, 4, 1, 2, sim::kBoundaryTrap) == 0);
  CHECK(words(dense_of(layered, mem))[2 * 4 + 1 * 2 + 1] == 42);
  uint32_t v = 0;
  CHECK(sim::surface_read(layered, mem.data(), 4, 1, 3, &v, 4, sim::kBoundaryTrap) == -1);
  REQUIRE(sim::surface_read(layered, mem.data(), 4, 1, 3, &v, 4, sim::kBoundaryClamp) == 0);
  CHECK(v == 42);

  const auto cube = surface(2, 2, 6, TextureDesc::kCubemap);  // z: the face
  auto mc = laid_out(cube, bytes(std::vector<uint32_t>(24)));
  REQUIRE(sim::surface_write(cube, mc.data(), &w, 4, 0, 1, 5, sim::kBoundaryTrap) == 0);
  CHECK(words(dense_of(cube, mc))[5 * 4 + 2] == 42);
  CHECK(sim::surface_write(cube, mc.data(), &w, 4, 0, 1, 6, sim::kBoundaryTrap) == -1);
}

TEST_CASE("surface: 1D layered surfaces (height 0, the layer in z)") {
  const auto d = surface(4, 0, 2, TextureDesc::kLayered);
  auto mem = laid_out(d, bytes(std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  uint32_t v = 0;
  REQUIRE(sim::surface_read(d, mem.data(), 8, 0, 1, &v, 4, sim::kBoundaryTrap) == 0);
  CHECK(v == 6);
  CHECK(sim::surface_read(d, mem.data(), 8, 1, 1, &v, 4, sim::kBoundaryTrap) == -1);
}

TEST_CASE("texture and surface: array rows are padded to 32 bytes") {
  // 3 floats: 12-byte rows, each padded to 32.
  auto d = array(Format::kFloat, 3, 2);
  REQUIRE(vgpu::executor::row_pitch(d) == 32);
  REQUIRE(vgpu::executor::resource_bytes(d) == 64);
  const auto dense = bytes(std::vector<float>{1, 2, 3, 4, 5, 6});
  const auto mem = laid_out(d, dense);
  float row1[3], pad = 0;
  std::memcpy(row1, mem.data() + 32, sizeof row1);  // row 1 starts at byte 32
  CHECK((row1[0] == 4 && row1[1] == 5 && row1[2] == 6));
  std::memcpy(&pad, mem.data() + 12, sizeof pad);    // bytes 12..31: row 0's padding
  CHECK(padding_intact(d, mem));

  for (int x = 0; x < 3; ++x) {
    INFO("column " << x);
    const float v = read1(d, dense, static_cast<float>(x) + 0.5f, 1.5f);
    CHECK(v == static_cast<float>(4 + x));
    CHECK(v != pad);
    CHECK(read1(d, dense, static_cast<float>(x) + 0.5f, 0.5f) == static_cast<float>(1 + x));
  }
  CHECK(read1(d, dense, 9.0f, 1.5f) == 6);  // clamped to row 1's last texel, not into its padding
  CHECK(read1(d, dense, 9.0f, 0.5f) == 3);  // nor row 0's
  d.filter = Filter::kLinear;
  CHECK(read1(d, dense, 3.0f, 1.0f) == 4.5f);  // (3 + 3 + 6 + 6) / 4: the right edge clamps within each row

  // A surface of 3 x uint32, 2 rows: the last element of row 0 is at byte 8,
  // row 1 at byte 32.
  const auto s = surface(3, 2);
  auto sm = laid_out(s, bytes(std::vector<uint32_t>{0, 1, 2, 3, 4, 5}));
  const uint32_t w = 0xabcd;
  REQUIRE(sim::surface_write(s, sm.data(), &w, 4, 8, 0, 0, sim::kBoundaryTrap) == 0);
  uint32_t at8 = 0;
  std::memcpy(&at8, sm.data() + 8, sizeof at8);
  CHECK(at8 == 0xabcd);
  CHECK(words(dense_of(s, sm)) == std::vector<uint32_t>{0, 1, 0xabcd, 3, 4, 5});  // row 1 untouched
  CHECK(padding_intact(s, sm));
  uint32_t v = 0;
  REQUIRE(sim::surface_read(s, sm.data(), 8, 1, 0, &v, 4, sim::kBoundaryTrap) == 0);
  CHECK(v == 5);  // byte 40
  CHECK(sim::surface_read(s, sm.data(), 12, 0, 0, &v, 4, sim::kBoundaryTrap) == -1);  // padding is outside
  REQUIRE(sim::surface_read(s, sm.data(), 12, 0, 0, &v, 4, sim::kBoundaryClamp) == 0);
  CHECK(v == 0xabcd);
  REQUIRE(sim::surface_write(s, sm.data(), &w, 4, 12, 0, 0, sim::kBoundaryZero) == 0);  // dropped
  CHECK(padding_intact(s, sm));
}
