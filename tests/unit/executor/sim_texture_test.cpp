// Texture and surface objects on the sim backend: the host makes one only
// over the context's own memory and with a description it implements; a
// kernel reads it through its worker; no context can read another's object;
// destroy and reset forget them.
#include "sim_test_support.h"

using namespace vgpu;
using namespace vgpu::executor;
using namespace vgpu::executor::test;

namespace {

// A 4 x 2 float array at `base`: the layout texture.h gives arrays.
TextureDesc array_2d(uint64_t base) {
  TextureDesc d;
  d.resource = TextureDesc::Resource::kArray;
  d.base = base;
  d.width = 4;
  d.height = 2;
  d.format = TextureDesc::Format::kFloat;
  d.channels = 1;
  return d;
}

Handle read_texture_function(Backend& b, ContextId ctx) {
  const auto image = fixture_fatbin();
  Handle m = 0, f = 0;
  FunctionInfo info;
  REQUIRE(b.module_load(ctx, image, &m) == Status::kSuccess);
  REQUIRE(b.function_get(ctx, m, "_Z12read_textureyPf", &f, &info) == Status::kSuccess);
  REQUIRE(info.param_bytes == 16);
  return f;
}

}  // namespace

TEST_CASE("sim textures: made only over the context's own memory") {
  auto b = make_backend();
  const ContextId mine = new_context(*b, 1);
  const ContextId theirs = new_context(*b, 2);
  const uint64_t own = alloc(*b, mine, 4096);
  const uint64_t other = alloc(*b, theirs, 4096);
  Handle h = 0;

  CHECK(b->texture_create(mine, array_2d(own), &h) == Status::kSuccess);
  CHECK(h > 2);
  const uint64_t bytes = resource_bytes(array_2d(0));  // two rows, each padded to 32 bytes
  REQUIRE(bytes == 64);
  Handle h2 = 0;
  CHECK(b->texture_create(mine, array_2d(own + 4096 - bytes), &h2) == Status::kSuccess);  // ends at the end
  CHECK(h2 != h);

  Handle none = 0;
  CHECK(b->texture_create(mine, array_2d(other), &none) == Status::kInvalidValue);       // another tenant's
  CHECK(b->texture_create(mine, array_2d(own + 4096 - bytes + 4), &none) == Status::kInvalidValue);  // past the end
  CHECK(b->texture_create(mine, array_2d(0), &none) == Status::kInvalidValue);
  TextureDesc pitched = array_2d(own);
  pitched.resource = TextureDesc::Resource::kPitch2D;
  pitched.pitch = 2048;
  pitched.height = 3;  // rows at 0, 2048, 4096: the last one is past the allocation
  CHECK(b->texture_create(mine, pitched, &none) == Status::kInvalidValue);
  pitched.height = 2;
  CHECK(b->texture_create(mine, pitched, &none) == Status::kSuccess);
  CHECK(none != 0);
}

TEST_CASE("sim textures: descriptions it does not implement are refused") {
  auto b = make_backend();
  const ContextId ctx = new_context(*b, 1);
  const uint64_t p = alloc(*b, ctx, 1 << 20);
  Handle h = 0;
  auto refused = [&](TextureDesc d) { return b->texture_create(ctx, d, &h) == Status::kInvalidValue; };
  TextureDesc d = array_2d(p);
  d.format = static_cast<TextureDesc::Format>(0x77);
  CHECK(refused(d));
  d = array_2d(p);
  d.channels = 3;
  CHECK(refused(d));
  d = array_2d(p);
  d.address[1] = static_cast<TextureDesc::Address>(9);
  CHECK(refused(d));
  d = array_2d(p);
  d.format = TextureDesc::Format::kInt32;  // linear filtering of integers read as integers
  d.filter = TextureDesc::Filter::kLinear;
  CHECK(refused(d));
  d = array_2d(p);
  d.object = TextureDesc::Object::kSurface;  // the array was not made for surfaces
  CHECK(refused(d));
  d.array_flags = TextureDesc::kSurfaceLoadStore;
  CHECK(b->texture_create(ctx, d, &h) == Status::kSuccess);
  d = array_2d(p);
  d.width = uint64_t{1} << 40;  // sizes that would overflow
  d.height = uint64_t{1} << 40;
  CHECK(refused(d));
  d = array_2d(p);
  d.array_flags = TextureDesc::kCubemap;  // not square, not 6 faces
  CHECK(refused(d));
  CHECK(b->texture_create(ctx, array_2d(p), nullptr) == Status::kInvalidValue);
}

TEST_CASE("sim textures: a kernel reads its own object, and not another context's") {
  auto b = make_backend();
  const ContextId mine = new_context(*b, 1);
  const ContextId theirs = new_context(*b, 2);
  const float texels[16] = {0, 1, 2, 3, 0, 0, 0, 0, 10, 11, 12, 13, 0, 0, 0, 0};  // rows of 32 bytes
  const uint64_t array = alloc(*b, mine, sizeof texels);
  REQUIRE(put(*b, mine, array, texels, sizeof texels) == Status::kSuccess);
  Handle tex = 0;
  REQUIRE(b->texture_create(mine, array_2d(array), &tex) == Status::kSuccess);

  const Handle f = read_texture_function(*b, mine);
  const uint64_t out = alloc(*b, mine, 4);
  REQUIRE(run(*b, mine, launch(f, Params(16).at(0, tex).at(8, out).take())).status == Status::kSuccess);
  CHECK(get_value<float>(*b, mine, out) == 1.0f);

  // The other context names the same handle: destroying it there is
  // refused, and its kernel cannot read it (its worker has no such object;
  // the failed launch faults that context only).
  CHECK(run(*b, theirs, DestroyTexture{tex}).status == Status::kInvalidResourceHandle);
  const Handle g = read_texture_function(*b, theirs);
  const uint64_t their_out = alloc(*b, theirs, 4);
  CHECK(run(*b, theirs, launch(g, Params(16).at(0, tex).at(8, their_out).take())).status ==
        Status::kLaunchFailure);
  REQUIRE(run(*b, mine, launch(f, Params(16).at(0, tex).at(8, out).take())).status == Status::kSuccess);
  // Here it is destroyed once.
  CHECK(run(*b, mine, DestroyTexture{tex}).status == Status::kSuccess);
  CHECK(run(*b, mine, DestroyTexture{tex}).status == Status::kInvalidResourceHandle);
  // A launch after the destroy no longer finds it.
  CHECK(run(*b, mine, launch(f, Params(16).at(0, tex).at(8, out).take())).status == Status::kLaunchFailure);
}

TEST_CASE("sim textures: a reset forgets them; each context has a bound") {
  auto b = make_backend();
  const ContextId ctx = new_context(*b, 1);
  const uint64_t p = alloc(*b, ctx, 4096);
  Handle h = 0;
  REQUIRE(b->texture_create(ctx, array_2d(p), &h) == Status::kSuccess);
  REQUIRE(run(*b, ctx, Reset{}).status == Status::kSuccess);
  CHECK(run(*b, ctx, DestroyTexture{h}).status == Status::kInvalidResourceHandle);

  const uint64_t q = alloc(*b, ctx, 4096);
  Status last = Status::kSuccess;
  size_t made = 0;
  while (made < 70000 && ok(last = b->texture_create(ctx, array_2d(q), &h))) ++made;
  CHECK(last == Status::kMemoryAllocation);
  CHECK(made == 65536);
}
