// tex, suld and sust: texture and surface objects read and written through the environment's
// texture unit (the sim's CPU sampler), which knows each object's format, layout, addressing
// and filtering. This file only takes the PTX operands apart:
//
//   tex.geom.v4.dtype.ctype  {d0, d1, d2, d3}, [handle, {coordinates}] (, lod with .level);
//   suld.b.geom(.vN).bT.mode {d...}, [handle, {x_bytes, y, z}];
//   sust.b.geom(.vN).bT.mode [handle, {x_bytes, y, z}], {s...};
//
// Coordinates by geometry (PTX ISA, "Texture Instructions"): 1d {x}, 2d {x, y}, 3d and cube
// {x, y, z, -}, a1d {layer, x}, a2d {layer, x, y, -}, acube {layer, x, y, z}; the layer is
// always a 32-bit integer, the others of the ctype (surfaces: integers, x in bytes).
#include "ptx_exec.h"
#include "ptx_values.h"

namespace vgpu::executor::sim::ptx {
namespace {

struct Coordinates {
  uint64_t v[4] = {0, 0, 0, 0};
  int n = 0;
};

Coordinates coordinates(Context& c, Thread& t, const Operand& o) {
  Coordinates r;
  if (o.kind != Operand::kVec) return r;
  r.n = (int)std::min<int64_t>(o.value, 4);
  for (int i = 0; i < r.n; ++i) r.v[i] = operand_value(c, t, c.p->vector_elements[o.id + i]);
  return r;
}

bool layered(Mode g) { return g == Mode::kTexA1d || g == Mode::kTexA2d || g == Mode::kTexACube; }

// How many coordinates (after the layer) a geometry reads.
int dimensions(Mode g) {
  switch (g) {
    case Mode::kTex1d: case Mode::kTexA1d: return 1;
    case Mode::kTex2d: case Mode::kTexA2d: return 2;
    default: return 3;
  }
}

uint64_t handle_of(Thread& t, const Operand& o) { return t.r[o.id] + (uint64_t)o.value; }

bool tex(Context& c, Thread& t, const Instr& in) {
  const Coordinates k = coordinates(c, t, in.ops[2]);
  const uint64_t handle = handle_of(t, in.ops[1]);
  const bool lay = layered(in.mode);
  const int dims = dimensions(in.mode);
  if (k.n < dims + (lay ? 1 : 0)) return trap(c, in, "too few texture coordinates");
  const int layer = lay ? (int)(int32_t)k.v[0] : 0;
  const uint64_t* x = k.v + (lay ? 1 : 0);
  uint32_t out[4] = {0, 0, 0, 0};
  bool ok;
  if (in.type2 == Type::kS32 && in.mode == Mode::kTex1d) {
    ok = c.env->texture_fetch(handle, (int32_t)x[0], out);  // tex1Dfetch
  } else {
    float coord[3] = {0, 0, 0};
    for (int i = 0; i < dims; ++i) coord[i] = in.type2 == Type::kF32 ? as_f32(x[i]) : (float)(int32_t)x[i];
    const float lod = (in.flags & kLevel) ? as_f32(operand_value(c, t, in.ops[3])) : 0.0f;
    ok = c.env->texture_read(handle, coord, layer, lod, out);
  }
  if (!ok) return trap(c, in, "texture read of an object that is not one of this context's textures");
  const Operand& d = in.ops[0];
  if (d.kind != Operand::kVec) return trap(c, in, "tex without a vector destination");
  for (int i = 0; i < d.value && i < 4; ++i) write_reg(t, c.p->vector_elements[d.id + i], out[i], in.type);
  return true;
}

// suld/sust: ops are {data} [handle, {coords}] or [handle, {coords}] {data}.
bool surface(Context& c, Thread& t, const Instr& in) {
  const bool write = in.op == Op::kSust;
  const Operand& mem = in.ops[write ? 0 : 1];
  const Coordinates k = coordinates(c, t, in.ops[write ? 1 : 2]);
  const Operand& data = in.ops[write ? 2 : 0];
  const bool lay = layered(in.mode);
  const int dims = dimensions(in.mode);
  if (in.mode == Mode::kTexCube || in.mode == Mode::kTexACube) return trap(c, in, "cubemap surface geometry");
  if (k.n < dims + (lay ? 1 : 0)) return trap(c, in, "too few surface coordinates");
  const uint64_t* x = k.v + (lay ? 1 : 0);
  int64_t pos[3] = {0, 0, 0};
  for (int i = 0; i < dims; ++i) pos[i] = (int32_t)x[i];
  if (lay) pos[2] = (int32_t)k.v[0];  // the layer is the slice
  const int size = type_size(in.type);
  const int elems = data.kind == Operand::kVec ? (int)data.value : 1;
  if (size < 1 || size > 8 || elems < 1 || elems > 4 || size * elems > 16) return trap(c, in, "bad surface access size");
  uint8_t bytes[16] = {};
  auto element = [&](int i) -> const Operand& { return data.kind == Operand::kVec ? c.p->vector_elements[data.id + i] : data; };
  if (write) {
    for (int i = 0; i < elems; ++i) {
      uint64_t v = operand_value(c, t, element(i));
      memcpy(bytes + i * size, &v, size);
    }
  }
  const int boundary = (in.flags & kBoundaryZero) ? 0 : (in.flags & kClamp) ? 1 : 2;
  if (!c.env->surface_access(handle_of(t, mem), pos[0], pos[1], pos[2], bytes, (size_t)(size * elems), boundary, write))
    return trap(c, in, write ? "surface write outside the surface, or to an object that is not one of this context's surfaces"
                             : "surface read outside the surface, or of an object that is not one of this context's surfaces");
  if (!write) {
    for (int i = 0; i < elems; ++i) {
      uint64_t v = 0;
      memcpy(&v, bytes + i * size, size);
      write_reg(t, element(i), v, in.type);
    }
  }
  return true;
}

}  // namespace

bool texture_instruction(Context& c, Thread& t, const Instr& in) {
  return in.op == Op::kTex ? tex(c, t, in) : surface(c, t, in);
}

}  // namespace vgpu::executor::sim::ptx
