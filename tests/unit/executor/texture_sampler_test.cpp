// The sim worker's texture unit: texture_read and texture_fetch as CUDA's
// tex* device functions return, on memory laid out as texture.h says.
#include "texture_test_support.h"

TEST_CASE("texture: point sampling reads the texel a coordinate falls in") {
  auto d = array(Format::kFloat, 4);
  const auto mem = bytes(std::vector<float>{10, 20, 30, 40});
  CHECK(read1(d, mem, 0.5f) == 10);
  CHECK(read1(d, mem, 1.5f) == 20);
  CHECK(read1(d, mem, 2.0f) == 30);    // a texel's left edge is that texel
  CHECK(read1(d, mem, 3.99f) == 40);
  CHECK(read(d, mem, 1.5f)[1] == -12345);  // one channel written, no more
  CHECK(read1(d, mem, 2.5f) == 30);    // unnormalized: texel units
  d.read_flags = TextureDesc::kNormalizedCoordinates;
  CHECK(read1(d, mem, 0.625f) == 30);  // 0.625 * 4 = 2.5
  CHECK(read1(d, mem, 0.125f) == 10);
  CHECK(read1(d, mem, 2.5f) == 40);    // normalized 2.5 is past the end: clamped

  // 2D: each coordinate scales by its own dimension.
  auto d2 = array(Format::kFloat, 4, 2);
  d2.read_flags = TextureDesc::kNormalizedCoordinates;
  const auto mem2 = bytes(iota(8, 0));
  CHECK(read1(d2, mem2, 0.375f, 0.75f) == 5);  // (1.5, 1.5) -> row 1, column 1
  CHECK(read1(d2, mem2, 0.875f, 0.25f) == 3);
}

TEST_CASE("texture: linear filtering, with 8-bit weights") {
  auto d = array(Format::kFloat, 4);
  d.filter = Filter::kLinear;
  const auto mem = bytes(std::vector<float>{0, 10, 20, 40});
  CHECK(read1(d, mem, 1.5f) == 10);    // a texel center is the texel
  CHECK(read1(d, mem, 1.0f) == 5);     // midpoint
  CHECK(read1(d, mem, 1.25f) == 7.5f); // quarter points
  CHECK(read1(d, mem, 2.75f) == 25);
  CHECK(read1(d, mem, 0.25f) == 0);    // clamp: texel -1 is texel 0
  d.read_flags = TextureDesc::kNormalizedCoordinates;
  CHECK(read1(d, mem, 0.25f) == 5);    // 0.25 * 4 = 1.0

  // The weight is rounded to a multiple of 1/256.
  auto q = array(Format::kFloat, 2);
  q.filter = Filter::kLinear;
  const auto mq = bytes(std::vector<float>{0, 256});
  CHECK(read1(q, mq, 0.5f + 0.7f / 256) == 1);  // weight 0.7/256 -> 1/256
  CHECK(read1(q, mq, 0.5f + 0.4f / 256) == 0);  // weight 0.4/256 -> 0
  CHECK(read1(q, mq, 0.5f + 64.3f / 256) == 64);

  // Bilinear over v = x + 4y (exact for a linear function).
  auto d2 = array(Format::kFloat, 4, 2);
  d2.filter = Filter::kLinear;
  const auto mem2 = bytes(iota(8, 0));
  CHECK(read1(d2, mem2, 2.0f, 1.0f) == 3.5f);    // midpoint of texels (1..2, 0..1)
  CHECK(read1(d2, mem2, 1.75f, 0.75f) == 2.25f);  // quarter point: 1.25 + 4 * 0.25
}

TEST_CASE("texture: address modes on both sides of a normalized texture") {
  auto d = array(Format::kFloat, 4);
  d.read_flags = TextureDesc::kNormalizedCoordinates;
  d.border[0] = 9;
  const auto mem = bytes(std::vector<float>{1, 2, 3, 4});

  set_address(d, Address::kClamp);
  CHECK(read1(d, mem, -0.1f) == 1);
  CHECK(read1(d, mem, 1.1f) == 4);

  set_address(d, Address::kWrap);
  CHECK(read1(d, mem, -0.125f) == 4);  // texel -1 -> 3
  CHECK(read1(d, mem, -0.875f) == 1);  // texel -4 -> 0
  CHECK(read1(d, mem, 1.125f) == 1);   // texel 4 -> 0
  CHECK(read1(d, mem, 1.625f) == 3);   // texel 6 -> 2

  set_address(d, Address::kMirror);
  CHECK(read1(d, mem, -0.125f) == 1);  // texel -1 -> 0
  CHECK(read1(d, mem, -0.375f) == 2);  // texel -2 -> 1
  CHECK(read1(d, mem, 1.125f) == 4);   // texel 4 -> 3
  CHECK(read1(d, mem, 1.375f) == 3);   // texel 5 -> 2
  CHECK(read1(d, mem, 2.125f) == 1);   // texel 8 -> 0: the pattern repeats

  set_address(d, Address::kBorder);
  CHECK(read1(d, mem, -0.1f) == 9);
  CHECK(read1(d, mem, 1.0f) == 9);
  CHECK(read1(d, mem, 0.99f) == 4);

  // Linear filtering at the left edge blends with what each mode addresses.
  d.filter = Filter::kLinear;
  set_address(d, Address::kWrap);
  CHECK(read1(d, mem, 0.0f) == 2.5f);  // (texel 3 + texel 0) / 2
  set_address(d, Address::kMirror);
  CHECK(read1(d, mem, 0.0f) == 1);
  set_address(d, Address::kClamp);
  CHECK(read1(d, mem, 0.0f) == 1);
  set_address(d, Address::kBorder);
  CHECK(read1(d, mem, 0.0f) == 5);     // (border + texel 0) / 2
  CHECK(read1(d, mem, 1.0f) == 6.5f);  // (texel 3 + border) / 2

  // Each dimension has its own mode.
  auto d2 = array(Format::kFloat, 2, 2);
  d2.read_flags = TextureDesc::kNormalizedCoordinates;
  d2.address[0] = Address::kWrap;
  d2.address[1] = Address::kBorder;
  d2.border[0] = 7;
  const auto mem2 = bytes(std::vector<float>{0, 1, 2, 3});
  CHECK(read1(d2, mem2, 1.25f, 0.75f) == 2);  // x wraps to column 0, row 1
  CHECK(read1(d2, mem2, 0.25f, 1.25f) == 7);  // y is past the border
}

TEST_CASE("texture: wrap and mirror without normalized coordinates clamp") {
  auto d = array(Format::kFloat, 4);
  const auto mem = bytes(std::vector<float>{1, 2, 3, 4});
  for (Address a : {Address::kWrap, Address::kMirror, Address::kClamp}) {
    set_address(d, a);
    CHECK(read1(d, mem, -1.0f) == 1);
    CHECK(read1(d, mem, 5.0f) == 4);
  }
  set_address(d, Address::kBorder);
  d.border[0] = -3;
  CHECK(read1(d, mem, -0.5f) == -3);
  CHECK(read1(d, mem, 4.0f) == -3);
  CHECK(read1(d, mem, 3.5f) == 4);
}

TEST_CASE("texture: pitch2D rows are pitch bytes apart") {
  TextureDesc d;
  d.resource = Resource::kPitch2D;
  d.format = Format::kFloat;
  d.width = 2, d.height = 2, d.pitch = 16;
  const auto mem = bytes(std::vector<float>{1, 2, -1, -1, 3, 4});  // row 0, padding, row 1
  CHECK(read1(d, mem, 1.5f, 1.5f) == 4);
  CHECK(read1(d, mem, 0.5f, 1.5f) == 3);
  CHECK(read1(d, mem, 0.5f, 9.0f) == 3);  // clamped to the last row, not into padding
  d.filter = Filter::kLinear;
  CHECK(read1(d, mem, 1.0f, 1.0f) == 2.5f);
}

TEST_CASE("texture: integer formats read as elements") {
  auto d = array(Format::kUint8, 2, 2, 0, 4);
  d.read_flags = TextureDesc::kReadAsInteger;
  std::vector<uint8_t> dense(16);
  for (size_t i = 0; i < dense.size(); ++i) dense[i] = static_cast<uint8_t>(i);
  const auto mem = laid_out(d, dense);
  REQUIRE(mem.size() == vgpu::executor::resource_bytes(d));
  const float at[3] = {1.5f, 0.5f, 0};
  uint8_t out[4] = {};
  REQUIRE(sim::texture_read(d, mem.data(), at, 0, 0, out) == 0);
  CHECK(std::vector<uint8_t>(out, out + 4) == std::vector<uint8_t>{4, 5, 6, 7});
  const float row1[3] = {0.5f, 1.5f, 0};
  REQUIRE(sim::texture_read(d, mem.data(), row1, 0, 0, out) == 0);
  CHECK(std::vector<uint8_t>(out, out + 4) == std::vector<uint8_t>{8, 9, 10, 11});

  // The border color is converted to the element type, saturated.
  set_address(d, Address::kBorder);
  d.border[0] = 1, d.border[1] = 2, d.border[2] = 300, d.border[3] = -5;
  const float outside[3] = {-1, 0.5f, 0};
  REQUIRE(sim::texture_read(d, mem.data(), outside, 0, 0, out) == 0);
  CHECK(std::vector<uint8_t>(out, out + 4) == std::vector<uint8_t>{1, 2, 255, 0});

  // Signed 16-bit, two channels: the raw values.
  auto s = array(Format::kInt16, 2, 0, 0, 2);
  s.read_flags = TextureDesc::kReadAsInteger;
  const auto smem = laid_out(s, bytes(std::vector<int16_t>{-7, 300, -32768, 32767}));
  const float at1[3] = {1.5f, 0, 0};
  int16_t sout[2] = {};
  REQUIRE(sim::texture_read(s, smem.data(), at1, 0, 0, sout) == 0);
  CHECK(sout[0] == -32768);
  CHECK(sout[1] == 32767);
}

TEST_CASE("texture: integer formats read as normalized floats") {
  auto u8 = array(Format::kUint8, 3);
  const std::vector<uint8_t> m8{0, 51, 255};
  CHECK(read1(u8, m8, 0.5f) == 0);
  CHECK(read1(u8, m8, 1.5f) == 0.2f);
  CHECK(read1(u8, m8, 2.5f) == 1);

  auto s8 = array(Format::kInt8, 4);
  const auto ms8 = bytes(std::vector<int8_t>{-128, -127, 127, 64});
  CHECK(read1(s8, ms8, 0.5f) == -1);  // -128/127 is clamped to -1
  CHECK(read1(s8, ms8, 1.5f) == -1);
  CHECK(read1(s8, ms8, 2.5f) == 1);
  CHECK(read1(s8, ms8, 3.5f) == 64.0f / 127.0f);

  auto u16 = array(Format::kUint16, 2);
  const auto m16 = bytes(std::vector<uint16_t>{65535, 32768});
  CHECK(read1(u16, m16, 0.5f) == 1);
  CHECK(read1(u16, m16, 1.5f) == 32768.0f / 65535.0f);

  // Linear filtering between normalized values.
  u8.filter = Filter::kLinear;
  CHECK(read1(u8, m8, 2.0f) == Approx((0.2 + 1.0) / 2));

  // sRGB: r, g, b decoded to linear, alpha not.
  auto rgba = array(Format::kUint8, 1, 0, 0, 4);
  const std::vector<uint8_t> px{255, 0, 128, 128};
  auto plain = read(rgba, px, 0.5f);
  CHECK(plain[2] == 128.0f / 255.0f);
  rgba.read_flags = TextureDesc::kSrgb;
  auto lin = read(rgba, px, 0.5f);
  CHECK(lin[0] == 1);
  CHECK(lin[1] == 0);
  CHECK(lin[2] == Approx(0.2158605).epsilon(1e-5));
  CHECK(lin[3] == 128.0f / 255.0f);
}

TEST_CASE("texture: half floats") {
  auto d = array(Format::kHalf, 7);
  const auto mem = bytes(std::vector<uint16_t>{0x3c00, 0xc000, 0x3555, 0x0001, 0x7bff, 0xfc00, 0x7e00});
  CHECK(read1(d, mem, 0.5f) == 1);
  CHECK(read1(d, mem, 1.5f) == -2);
  CHECK(read1(d, mem, 2.5f) == 0.333251953125f);
  CHECK(read1(d, mem, 3.5f) == std::ldexp(1.0f, -24));  // smallest subnormal
  CHECK(read1(d, mem, 4.5f) == 65504);
  CHECK(read1(d, mem, 5.5f) == -std::numeric_limits<float>::infinity());
  CHECK(std::isnan(read1(d, mem, 6.5f)));
  d.filter = Filter::kLinear;
  CHECK(read1(d, mem, 1.0f) == -0.5f);  // (1 + -2) / 2

  // Half textures return floats even when integers are asked for.
  d.filter = Filter::kPoint;
  d.read_flags = TextureDesc::kReadAsInteger;
  CHECK(read1(d, mem, 1.5f) == -2);
}

TEST_CASE("texture: layered textures read one layer and refuse a bad one") {
  auto d = array(Format::kFloat, 2, 2, 3);
  d.array_flags = TextureDesc::kLayered;
  std::vector<float> v;
  for (int layer = 0; layer < 3; ++layer)
    for (int i = 0; i < 4; ++i) v.push_back(static_cast<float>(layer * 10 + i));
  const auto dense = bytes(v);
  CHECK(read1(d, dense, 1.5f, 0.5f, 0, 2) == 21);
  CHECK(read1(d, dense, 0.5f, 1.5f, 0, 1) == 12);
  d.filter = Filter::kLinear;  // filters within the layer only
  CHECK(read1(d, dense, 1.0f, 1.0f, 0, 1) == 11.5f);
  CHECK(read1(d, dense, -5.0f, 9.0f, 0, 0) == 2);

  const auto mem = laid_out(d, dense);
  const float at[3] = {0.5f, 0.5f, 0};
  float out = 0;
  CHECK(sim::texture_read(d, mem.data(), at, 3, 0, &out) == -1);
  CHECK(sim::texture_read(d, mem.data(), at, -1, 0, &out) == -1);
}

TEST_CASE("texture: 1D layered textures (height 0, depth the layer count)") {
  auto d = array(Format::kFloat, 2, 0, 2);
  d.array_flags = TextureDesc::kLayered;
  const auto dense = bytes(std::vector<float>{1, 2, 3, 4});
  CHECK(read1(d, dense, 1.5f, 0, 0, 1) == 4);
  CHECK(read1(d, dense, 0.5f, 0, 0, 1) == 3);
  const auto mem = laid_out(d, dense);
  const float at[3] = {0.5f, 0, 0};
  float out = 0;
  CHECK(sim::texture_read(d, mem.data(), at, 2, 0, &out) == -1);
}

TEST_CASE("texture: 3D point and trilinear") {
  auto d = array(Format::kFloat, 2, 2, 2);
  std::vector<float> v;  // v = x + 2y + 4z
  for (int z = 0; z < 2; ++z)
    for (int y = 0; y < 2; ++y)
      for (int x = 0; x < 2; ++x) v.push_back(static_cast<float>(x + 2 * y + 4 * z));
  const auto mem = bytes(v);
  CHECK(read1(d, mem, 1.5f, 0.5f, 1.5f) == 5);
  CHECK(read1(d, mem, 0.5f, 1.5f, 0.5f) == 2);
  d.filter = Filter::kLinear;
  CHECK(read1(d, mem, 1.0f, 1.0f, 1.0f) == 3.5f);    // the center: all eight texels
  CHECK(read1(d, mem, 1.25f, 1.0f, 0.75f) == 2.75f);  // 0.75 + 2 * 0.5 + 4 * 0.25
  d.filter = Filter::kPoint;
  d.read_flags = TextureDesc::kNormalizedCoordinates;
  CHECK(read1(d, mem, 0.75f, 0.25f, 0.75f) == 5);
}

TEST_CASE("texture: cubemap face selection") {
  auto d = array(Format::kFloat, 2, 2, 12);
  d.array_flags = TextureDesc::kCubemap | TextureDesc::kLayered;
  const auto mem = bytes(iota(2 * 6 * 4, 0));  // layer L, face f, texel (x, y): 24L + 4f + 2y + x
  struct Case {
    float dir[3];
    int face, x, y;
  };
  // s and t from the guide's table: +x (-z, -y), -x (z, -y), +y (x, z), -y (x, -z),
  // +z (x, -y), -z (-x, -y); each direction lands on a different quadrant.
  const Case cases[] = {
      {{1, 0.5f, -0.5f}, 0, 1, 0},   {{-1, 0.5f, -0.5f}, 1, 0, 0}, {{0.5f, 1, -0.5f}, 2, 1, 0},
      {{0.5f, -1, -0.5f}, 3, 1, 1},  {{-0.5f, 0.5f, 1}, 4, 0, 0},  {{-0.5f, -0.5f, -1}, 5, 1, 1},
      {{2, 1, -1}, 0, 1, 0},          // only the direction counts
      {{0.4f, -0.3f, 0.2f}, 0, 0, 1}, // a non-axis direction: x is largest
  };
  for (const Case& c : cases) {
    INFO("direction " << c.dir[0] << " " << c.dir[1] << " " << c.dir[2]);
    CHECK(read1(d, mem, c.dir[0], c.dir[1], c.dir[2], 0) == static_cast<float>(4 * c.face + 2 * c.y + c.x));
    CHECK(read1(d, mem, c.dir[0], c.dir[1], c.dir[2], 1) ==
          static_cast<float>(24 + 4 * c.face + 2 * c.y + c.x));
  }
  const float at[3] = {1, 0, 0};
  float out = 0;
  CHECK(sim::texture_read(d, laid_out(d, mem).data(), at, 2, 0, &out) == -1);

  // Not layered: the layer argument is not used.
  auto one = array(Format::kFloat, 2, 2, 6);
  one.array_flags = TextureDesc::kCubemap;
  const auto m1 = bytes(iota(24, 0));
  CHECK(read1(one, m1, 0, 0, -1, 5) == 20 + 3);  // -z, center: texel (1, 1)
}

TEST_CASE("texture: mipmap level selection") {
  TextureDesc d = array(Format::kFloat, 4, 4);
  d.resource = Resource::kMipmapped;
  d.levels = 3;
  d.max_lod = 10;
  d.read_flags = TextureDesc::kNormalizedCoordinates;
  std::vector<float> v = iota(16, 100);  // level 0: 4x4, 100 + i
  for (float f : iota(4, 200)) v.push_back(f);  // level 1: 2x2
  v.push_back(300);                              // level 2: 1x1
  const auto mem = bytes(v);
  auto at = [&](float lod) { return read1(d, mem, 0.75f, 0.25f, 0, 0, lod); };
  // (0.75, 0.25): level 0 texel (3, 1), level 1 texel (1, 0).
  CHECK(at(0) == 107);
  CHECK(at(0.4f) == 107);
  CHECK(at(0.6f) == 201);
  CHECK(at(1) == 201);
  CHECK(at(7) == 300);   // past the last level
  CHECK(at(-3) == 107);
  d.mipmap_bias = 1;
  CHECK(at(0.2f) == 201);
  d.mipmap_bias = 0, d.min_lod = 1;
  CHECK(at(0) == 201);
  d.min_lod = 0, d.max_lod = 1;
  CHECK(at(3) == 201);
  d.max_lod = 10;

  d.mipmap_filter = Filter::kLinear;
  CHECK(at(0.5f) == 154);          // (107 + 201) / 2
  CHECK(at(1.25f) == 225.75f);     // 0.75 * 201 + 0.25 * 300
  CHECK(at(2) == 300);
  CHECK(at(9) == 300);
  d.mipmap_filter = Filter::kPoint;
  d.filter = Filter::kLinear;  // bilinear within level 1, at its center
  CHECK(read1(d, mem, 0.5f, 0.5f, 0, 0, 1) == 201.5f);

  // Layers are not reduced: level 1 of a 2x2, 2-layer array is 1x1 x 2 layers.
  TextureDesc l = array(Format::kFloat, 2, 2, 2);
  l.resource = Resource::kMipmapped;
  l.array_flags = TextureDesc::kLayered;
  l.levels = 2;
  l.max_lod = 1;
  l.read_flags = TextureDesc::kNormalizedCoordinates;
  const auto ml = bytes(std::vector<float>{0, 1, 2, 3, 10, 11, 12, 13, 100, 101});
  CHECK(read1(l, ml, 0.5f, 0.5f, 0, 1, 1) == 101);
  CHECK(read1(l, ml, 0.75f, 0.75f, 0, 1, 0) == 13);

  // A 3D depth is: level 1 of 2x2x2 is 1x1x1.
  TextureDesc t = array(Format::kFloat, 2, 2, 2);
  t.resource = Resource::kMipmapped;
  t.levels = 2;
  t.max_lod = 1;
  t.read_flags = TextureDesc::kNormalizedCoordinates;
  const auto mt = bytes(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 50});
  CHECK(read1(t, mt, 0.9f, 0.9f, 0.9f, 0, 1) == 50);
  CHECK(read1(t, mt, 0.9f, 0.9f, 0.9f, 0, 0) == 7);
}

TEST_CASE("texture: tex1Dfetch reads linear memory by index, zeros outside") {
  TextureDesc d;
  d.resource = Resource::kLinear;
  d.format = Format::kFloat;
  d.width = 3;
  d.filter = Filter::kPoint;
  const auto mem = bytes(std::vector<float>{1, 2, 3});
  CHECK(read1(d, mem, 0) == 1);
  CHECK(read1(d, mem, 2) == 3);
  CHECK(read1(d, mem, 2.9f) == 3);  // truncated
  CHECK(read1(d, mem, 3) == 0);
  CHECK(read1(d, mem, -1) == 0);
  CHECK(read1(d, mem, 1e9f) == 0);
  CHECK(read1(d, mem, std::nanf("")) == 0);
  d.read_flags = TextureDesc::kNormalizedCoordinates;  // no effect on a fetch
  CHECK(read1(d, mem, 1) == 2);

  // By integer index (texture_fetch): exact where a float index is not.
  TextureDesc big = d;
  big.format = Format::kInt32;
  big.width = (1 << 24) + 2;
  std::vector<int32_t> ints(big.width);
  ints[1 << 24] = 7;
  ints[(1 << 24) + 1] = 8;
  int32_t got = -1;
  REQUIRE(sim::texture_fetch(big, reinterpret_cast<const uint8_t*>(ints.data()), (1 << 24) + 1, &got) == 0);
  CHECK(got == 8);
  REQUIRE(sim::texture_fetch(big, reinterpret_cast<const uint8_t*>(ints.data()), big.width, &got) == 0);
  CHECK(got == 0);
  REQUIRE(sim::texture_fetch(big, reinterpret_cast<const uint8_t*>(ints.data()), -1, &got) == 0);
  CHECK(got == 0);
  TextureDesc not_linear = big;
  not_linear.resource = Resource::kArray;
  not_linear.width = 2;
  CHECK(sim::texture_fetch(not_linear, reinterpret_cast<const uint8_t*>(ints.data()), 0, &got) == -1);

  TextureDesc u = d;
  u.width = 2;
  u.format = Format::kUint8;
  u.channels = 2;
  u.read_flags = 0;
  const std::vector<uint8_t> mu{255, 51, 0, 255};
  auto v = read(u, mu, 0);
  CHECK(v[0] == 1);
  CHECK(v[1] == 0.2f);
  CHECK(v[2] == -12345);
  u.read_flags = TextureDesc::kReadAsInteger;
  uint8_t out[2] = {7, 7};
  const float past[3] = {2, 0, 0};
  REQUIRE(sim::texture_read(u, mu.data(), past, 0, 0, out) == 0);
  CHECK((out[0] == 0 && out[1] == 0));
  const float one[3] = {1, 0, 0};
  REQUIRE(sim::texture_read(u, mu.data(), one, 0, 0, out) == 0);
  CHECK((out[0] == 0 && out[1] == 255));
}

TEST_CASE("texture: a descriptor texture_check refuses is not read") {
  auto d = array(Format::kUint8, 4);
  d.read_flags = TextureDesc::kReadAsInteger;
  d.filter = Filter::kLinear;  // linear filtering of integers
  const auto mem = laid_out(d, std::vector<uint8_t>(4));
  const float at[3] = {0, 0, 0};
  uint8_t out = 0;
  CHECK(sim::texture_read(d, mem.data(), at, 0, 0, &out) == -1);
  d.filter = Filter::kPoint;
  CHECK(sim::texture_read(d, nullptr, at, 0, 0, &out) == -1);
}
