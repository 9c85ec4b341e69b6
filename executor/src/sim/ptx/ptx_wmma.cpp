// wmma: the warp-wide matrix operations behind CUDA's nvcuda::wmma (tensor cores), run by a
// warp's lanes together once all of them have reached the instruction (.sync.aligned).
//
// Which lane holds which element of a fragment is the hardware's secret: CUDA leaves it
// unspecified, and code may only load, store, fill, multiply and change every element alike.
// The interpreter's order: lane l holds elements [l*n, l*n + n) of the matrix in row-major
// order (n = rows * columns / 32), packed as PTX packs them in its registers (two halves or two
// bf16 to a 32-bit register, four 8-bit integers), and repeated to fill the registers where PTX
// gives a fragment more (an f16 A fragment of m16n16k16 holds each element twice, as on sm_70
// and later). Each element is where the same element of another fragment of its shape is, so
// element-wise code (fill_fragment, scaling acc.x[i] by alpha and adding beta * c.x[i]) computes
// what it does on a GPU.
//
// Forms run: the shapes m16n16k16, m32n8k16 and m8n32k16 with f16 (f16 or f32 accumulators),
// bf16 and 8-bit integers (s32, with .satfinite); m16n16k8 with tf32; m8n8k4 with f64. Layouts
// row and col, strides, global, shared and generic addresses. Products are summed in double and
// rounded once to the accumulator's type (a GPU rounds along the way: results may differ in the
// last bits); tf32 inputs keep the 10 mantissa bits a tensor core reads. Refused by name:
// sub-byte integers and single bits (m8n8k32, m8n8k128), and anything else.
#include <algorithm>
#include <cstdint>

#include "ptx_exec.h"
#include "ptx_lex.h"

namespace vgpu::executor::sim::ptx {
namespace {

enum class MType : uint8_t { kNone, kF16, kBF16, kTF32, kF32, kF64, kS8, kU8, kS32 };

struct Shape { uint32_t m, n, k; };
constexpr Shape kShapes[] = {{0, 0, 0}, {16, 16, 16}, {32, 8, 16}, {8, 32, 16}, {16, 16, 8}, {8, 8, 4}};

// What the dotted opcode said, packed in Instr::flags (a wmma uses no other flag).
struct Form {
  uint32_t shape = 0;      // index into kShapes
  bool col = false;        // load/store: the matrix is column-major in memory
  MType t = MType::kNone;  // load/store: the element type; mma: the result's (d)
  MType a = MType::kNone;  // mma: A's and B's
  MType c = MType::kNone;  // mma: the accumulator's
  bool satfinite = false;
};
uint32_t pack(const Form& f) {
  return f.shape | (f.col ? 1u << 4 : 0) | uint32_t(f.t) << 8 | uint32_t(f.a) << 12 | uint32_t(f.c) << 16 |
         (f.satfinite ? 1u << 20 : 0);
}
Form unpack(uint32_t v) {
  Form f;
  f.shape = v & 15;
  f.col = (v >> 4) & 1;
  f.t = MType((v >> 8) & 15);
  f.a = MType((v >> 12) & 15);
  f.c = MType((v >> 16) & 15);
  f.satfinite = (v >> 20) & 1;
  return f;
}

MType mtype_of(std::string_view s) {
  static const std::pair<const char*, MType> k[] = {{"f16", MType::kF16}, {"bf16", MType::kBF16},
      {"tf32", MType::kTF32}, {"f32", MType::kF32}, {"f64", MType::kF64}, {"s8", MType::kS8},
      {"u8", MType::kU8}, {"s32", MType::kS32}};
  for (auto& [n, t] : k) if (s == n) return t;
  return MType::kNone;
}

int mtype_bytes(MType t) {
  switch (t) {
    case MType::kF16: case MType::kBF16: return 2;
    case MType::kS8: case MType::kU8: return 1;
    case MType::kF64: return 8;
    default: return 4;
  }
}

// Elements one register holds.
int per_register(MType t) { return t == MType::kF16 || t == MType::kBF16 ? 2 : t == MType::kS8 || t == MType::kU8 ? 4 : 1; }

// The matrix a fragment holds: A is m x k, B k x n, C and D m x n.
enum class Which : uint8_t { kA, kB, kC };
void dims(const Shape& s, Which w, uint32_t* rows, uint32_t* cols) {
  *rows = w == Which::kB ? s.k : s.m;
  *cols = w == Which::kA ? s.k : s.n;
}

// The registers PTX gives a fragment (its vector operand's length).
int registers(const Form& f, Which w, MType t) {
  const Shape& s = kShapes[f.shape];
  if (t == MType::kF16 && w != Which::kC) return 8;  // A and B of every f16 shape
  uint32_t rows, cols;
  dims(s, w, &rows, &cols);
  return (int)(rows * cols / 32 / per_register(t));
}

// Whether the element types fit the shape, as PTX allows them.
bool types_fit(uint32_t shape, MType in, MType acc) {
  const bool big = shape >= 1 && shape <= 3;
  switch (in) {
    case MType::kF16: return big && (acc == MType::kF16 || acc == MType::kF32);
    case MType::kBF16: return big && acc == MType::kF32;
    case MType::kS8: case MType::kU8: return big && acc == MType::kS32;
    case MType::kTF32: return shape == 4 && acc == MType::kF32;
    case MType::kF64: return shape == 5 && acc == MType::kF64;
    default: return false;
  }
}

// Whether an A or B (`input`), or a C or D fragment of type t exists in the shape: some
// product of the shape has it.
bool fragment_fits(uint32_t shape, MType t, bool input) {
  constexpr MType kInputs[] = {MType::kF16, MType::kBF16, MType::kTF32, MType::kF64, MType::kS8, MType::kU8};
  constexpr MType kAccumulators[] = {MType::kF16, MType::kF32, MType::kF64, MType::kS32};
  for (MType a : kInputs)
    for (MType c : kAccumulators)
      if (types_fit(shape, a, c) && (input ? a : c) == t) return true;
  return false;
}

double bf16_to_double(uint16_t b) { return as_f32(uint64_t(b) << 16); }

// An element's bits (as they sit in memory and in registers) as a number, and back.
double element_value(MType t, uint64_t bits) {
  switch (t) {
    case MType::kF16: return half_to_float((uint16_t)bits);
    case MType::kBF16: return bf16_to_double((uint16_t)bits);
    case MType::kTF32: return as_f32(bits & 0xffffe000u);  // a tensor core reads 10 mantissa bits
    case MType::kF32: return as_f32(bits);
    case MType::kF64: return as_f64(bits);
    case MType::kS8: return (int8_t)bits;
    case MType::kU8: return (uint8_t)bits;
    case MType::kS32: return (int32_t)bits;
    default: return 0;
  }
}
uint64_t element_bits(MType t, double v, bool satfinite) {
  switch (t) {
    case MType::kF16: return float_to_half((float)v);
    case MType::kF32: return bits_f32((float)v);
    case MType::kF64: return bits_f64(v);
    case MType::kS32: {
      // Integer sums are exact in double for these sizes; without .satfinite they wrap.
      const int64_t i = (int64_t)v;
      if (satfinite) return (uint32_t)(int32_t)std::clamp<int64_t>(i, INT32_MIN, INT32_MAX);
      return (uint32_t)i;
    }
    default: return 0;
  }
}

// A fragment's elements across the warp: value[lane][slot], as bits of the element type.
struct Fragment {
  uint32_t rows = 0, cols = 0, per_lane = 0;
  std::vector<uint64_t> bits;  // rows * cols, row-major: element e is lane e / per_lane's slot e % per_lane
};

Fragment make_fragment(const Form& f, Which w) {
  Fragment fr;
  dims(kShapes[f.shape], w, &fr.rows, &fr.cols);
  fr.per_lane = fr.rows * fr.cols / 32;
  fr.bits.assign(fr.rows * fr.cols, 0);
  return fr;
}

// Reads a lane's registers into the fragment (its first copy of each element).
void gather(Context& c, Thread& t, const Operand& vec, MType type, Fragment& fr) {
  const uint32_t lane = t.linear % 32;
  const int per = per_register(type), width = mtype_bytes(type) * 8;
  for (uint32_t slot = 0; slot < fr.per_lane; ++slot) {
    const Operand& reg = c.p->vector_elements[vec.id + slot / per];
    const uint64_t word = operand_value(c, t, reg);
    fr.bits[lane * fr.per_lane + slot] = (word >> (slot % per * width)) & mask_of(width / 8);
  }
}

// Writes the fragment's elements of a lane into its registers, repeated to fill them all.
void scatter(Thread& t, const Context& c, const Operand& vec, MType type, const Fragment& fr) {
  const uint32_t lane = t.linear % 32;
  const int per = per_register(type), width = mtype_bytes(type) * 8;
  const Type reg_type = mtype_bytes(type) == 8 ? Type::kB64 : Type::kB32;
  for (int r = 0; r < (int)vec.value; ++r) {
    uint64_t word = 0;
    for (int i = 0; i < per; ++i) {
      const uint32_t slot = (uint32_t)(r * per + i) % fr.per_lane;
      word |= fr.bits[lane * fr.per_lane + slot] << (i * width);
    }
    write_reg(t, c.p->vector_elements[vec.id + r], word, reg_type);
  }
}

// The matrix at the memory operand, as every lane names it (they all give the same one).
bool load_matrix(Context& c, Thread& t, const Instr& in, const Form& f, MType type, uint64_t stride, Fragment& fr) {
  const uint64_t es = mtype_bytes(type);
  // Memory runs along a row (row-major) or a column (col-major), `stride` elements apart.
  const uint32_t runs = f.col ? fr.cols : fr.rows, run_len = f.col ? fr.rows : fr.cols;
  for (uint32_t r = 0; r < runs; ++r) {
    Operand at = in.ops[1];
    at.value = (int64_t)((uint64_t)at.value + r * stride * es);  // wraps as an address does
    const uint8_t* p = address_in(c, t, in, at, run_len * es, in.space);
    if (!p) return false;
    for (uint32_t i = 0; i < run_len; ++i) {
      uint64_t v = 0;
      memcpy(&v, p + i * es, es);
      const uint32_t row = f.col ? i : r, col = f.col ? r : i;
      fr.bits[row * fr.cols + col] = v;
    }
  }
  return true;
}

bool store_matrix(Context& c, Thread& t, const Instr& in, const Form& f, uint64_t stride, const Fragment& fr) {
  const uint64_t es = mtype_bytes(f.t);
  const uint32_t runs = f.col ? fr.cols : fr.rows, run_len = f.col ? fr.rows : fr.cols;
  for (uint32_t r = 0; r < runs; ++r) {
    Operand at = in.ops[0];
    at.value = (int64_t)((uint64_t)at.value + r * stride * es);
    uint8_t* p = address_in(c, t, in, at, run_len * es, in.space);
    if (!p) return false;
    for (uint32_t i = 0; i < run_len; ++i) {
      const uint32_t row = f.col ? i : r, col = f.col ? r : i;
      memcpy(p + i * es, &fr.bits[row * fr.cols + col], es);
    }
  }
  return true;
}

// The stride operand (elements between rows or columns), or the matrix's own when absent.
uint64_t stride_of(Context& c, Thread& t, const Instr& in, const Form& f, const Fragment& fr) {
  if (in.num_operands >= 3) return (uint32_t)operand_value(c, t, in.ops[2]);
  return f.col ? fr.rows : fr.cols;
}

Which which_of(Mode m) { return m == Mode::kWmmaLoadA ? Which::kA : m == Mode::kWmmaLoadB ? Which::kB : Which::kC; }

}  // namespace

bool decode_wmma(std::string_view text, Instr* in) {
  in->op = Op::kUnsupported;
  std::vector<std::string_view> parts;
  for (size_t at = 0; at != std::string_view::npos;) {
    const size_t nd = text.find('.', at);
    parts.push_back(text.substr(at, nd == std::string_view::npos ? std::string_view::npos : nd - at));
    at = nd == std::string_view::npos ? nd : nd + 1;
  }
  if (parts.size() < 3 || parts[0] != "wmma") return false;
  Form f;
  size_t i = 2;
  if (parts[1] == "load" && (parts[2] == "a" || parts[2] == "b" || parts[2] == "c")) {
    in->mode = parts[2] == "a" ? Mode::kWmmaLoadA : parts[2] == "b" ? Mode::kWmmaLoadB : Mode::kWmmaLoadC;
    ++i;
  } else if (parts[1] == "store" && parts[2] == "d") {
    in->mode = Mode::kWmmaStore;
    ++i;
  } else if (parts[1] == "mma") {
    in->mode = Mode::kWmmaMma;
  } else {
    return false;
  }
  std::vector<MType> types;
  for (; i < parts.size(); ++i) {
    const std::string_view m = parts[i];
    if (m == "sync" || m == "aligned") continue;
    if (m == "row" || m == "col") {
      // mma names both A's and B's layouts: they only say how the fragments were loaded.
      if (in->mode != Mode::kWmmaMma) f.col = m == "col";
      continue;
    }
    if (m == "global") { in->space = Space::kGlobal; continue; }
    if (m == "shared" || m == "shared::cta") { in->space = Space::kShared; continue; }
    if (m == "satfinite") { f.satfinite = true; continue; }
    if (m == "rn" && in->mode == Mode::kWmmaMma) continue;  // f64's rounding: the only one run
    bool shape = false;
    for (uint32_t s = 1; s < std::size(kShapes); ++s) {
      const std::string name = "m" + std::to_string(kShapes[s].m) + "n" + std::to_string(kShapes[s].n) + "k" +
                               std::to_string(kShapes[s].k);
      if (m == name) { f.shape = s; shape = true; }
    }
    if (shape) continue;
    const MType t = mtype_of(m);
    if (t == MType::kNone) return false;
    types.push_back(t);
  }
  if (f.shape == 0) return false;
  if (in->mode == Mode::kWmmaMma) {
    // .dtype.ctype for f16 (A and B are f16), else .dtype.atype.btype.ctype.
    if (types.size() == 2) { f.t = types[0]; f.a = MType::kF16; f.c = types[1]; }
    else if (types.size() == 4 && types[1] == types[2]) { f.t = types[0]; f.a = types[1]; f.c = types[3]; }
    else return false;
    if (!types_fit(f.shape, f.a, f.c) || !types_fit(f.shape, f.a, f.t)) return false;
  } else {
    if (types.size() != 1) return false;
    f.t = types[0];
    if (!fragment_fits(f.shape, f.t, in->mode == Mode::kWmmaLoadA || in->mode == Mode::kWmmaLoadB)) return false;
  }
  in->op = Op::kWmma;
  in->flags = pack(f);
  return true;
}

std::string wmma_refusal(const Program& p, const Instr& in) {
  const Form f = unpack(in.flags);
  const std::string name = "instruction " + p.texts[in.text];
  auto vec_of = [&](const Operand& o, Which w, MType t) {
    return o.kind == Operand::kVec && o.value == registers(f, w, t);
  };
  switch (in.mode) {
    case Mode::kWmmaLoadA: case Mode::kWmmaLoadB: case Mode::kWmmaLoadC:
      if (in.num_operands < 2 || in.num_operands > 3 || !vec_of(in.ops[0], which_of(in.mode), f.t) ||
          in.ops[1].kind != Operand::kMem)
        return name + " (its operands)";
      return "";
    case Mode::kWmmaStore:
      if (in.num_operands < 2 || in.num_operands > 3 || in.ops[0].kind != Operand::kMem ||
          !vec_of(in.ops[1], Which::kC, f.t))
        return name + " (its operands)";
      return "";
    case Mode::kWmmaMma:
      if (in.num_operands != 4 || !vec_of(in.ops[0], Which::kC, f.t) || !vec_of(in.ops[1], Which::kA, f.a) ||
          !vec_of(in.ops[2], Which::kB, f.a) || !vec_of(in.ops[3], Which::kC, f.c))
        return name + " (its operands)";
      return "";
    default:
      return name;
  }
}

bool wmma_instruction(Context& c, std::vector<Thread*>& group) {
  Thread& first = *group[0];
  const Instr& in = c.p->functions[first.func].code[first.pc];
  const Form f = unpack(in.flags);
  switch (in.mode) {
    case Mode::kWmmaLoadA: case Mode::kWmmaLoadB: case Mode::kWmmaLoadC: {
      Fragment fr = make_fragment(f, which_of(in.mode));
      if (!load_matrix(c, first, in, f, f.t, stride_of(c, first, in, f, fr), fr)) return false;
      for (Thread* t : group) scatter(*t, c, in.ops[0], f.t, fr);
      return true;
    }
    case Mode::kWmmaStore: {
      Fragment fr = make_fragment(f, Which::kC);
      for (Thread* t : group) gather(c, *t, in.ops[1], f.t, fr);
      return store_matrix(c, first, in, f, stride_of(c, first, in, f, fr), fr);
    }
    default: {  // mma: d = a * b + c
      Fragment a = make_fragment(f, Which::kA), b = make_fragment(f, Which::kB), acc = make_fragment(f, Which::kC);
      for (Thread* t : group) {
        gather(c, *t, in.ops[1], f.a, a);
        gather(c, *t, in.ops[2], f.a, b);
        gather(c, *t, in.ops[3], f.c, acc);
      }
      const Shape& s = kShapes[f.shape];
      Fragment d = make_fragment(f, Which::kC);
      for (uint32_t i = 0; i < s.m; ++i) {
        for (uint32_t j = 0; j < s.n; ++j) {
          double sum = element_value(f.c, acc.bits[i * s.n + j]);
          for (uint32_t k = 0; k < s.k; ++k)
            sum += element_value(f.a, a.bits[i * s.k + k]) * element_value(f.a, b.bits[k * s.n + j]);
          d.bits[i * s.n + j] = element_bits(f.t, sum, f.satfinite);
        }
      }
      for (Thread* t : group) scatter(*t, c, in.ops[0], f.t, d);
      return true;
    }
  }
}

}  // namespace vgpu::executor::sim::ptx
