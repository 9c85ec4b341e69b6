#include "ptx.h"

#include <algorithm>
#include <vector>

#include "ptx_types.h"

namespace vgpu::fatbin::detail {
namespace {

struct VarDecl {
  std::string_view name;
  PtxType type;
  uint32_t vector = 1;
  uint64_t scalars = 1;  // elements times vector width (per outer element when unsized)
  bool unsized = false;  // `name[]`: the initializer gives the outer dimension
  bool opaque = false;   // .texref / .samplerref / .surfref: not data
  bool managed = false;  // .attribute(.managed)
};

bool opaque_type(std::string_view t) { return t == ".texref" || t == ".samplerref" || t == ".surfref"; }

Error skip_to_semicolon(PtxLexer& lex) {
  for (std::string_view t = lex.next(); t != ";"; t = lex.next()) {
    if (t.empty()) return Error::kBadPtx;
  }
  return Error::kNone;
}

Error parse_dims(PtxLexer& lex, VarDecl* d) {
  bool first = true;
  while (lex.peek() == "[") {
    lex.next();
    if (first && lex.peek() == "]") {
      d->unsized = true;
    } else {
      uint64_t n = 0;
      if (!parse_unsigned(lex.peek(), &n) || n == 0) return Error::kBadPtx;
      lex.next();
      if (n > UINT64_MAX / d->type.size / d->scalars) return Error::kTooLarge;
      d->scalars *= n;
    }
    if (lex.next() != "]") return Error::kBadPtx;
    first = false;
  }
  return Error::kNone;
}

// Qualifiers, type and name, then dimensions.
Error parse_declarator(PtxLexer& lex, VarDecl* d) {
  for (;;) {
    const std::string_view t = lex.next();
    if (t == ".attribute") {  // .attribute(.managed)
      if (lex.next() != "(") return Error::kBadPtx;
      for (std::string_view a = lex.next(); a != ")"; a = lex.next()) {
        if (a.empty()) return Error::kBadPtx;
        if (a == ".managed") d->managed = true;
      }
    } else if (t == ".align") {
      uint64_t a = 0;
      if (!parse_unsigned(lex.next(), &a) || !valid_alignment(a)) return Error::kBadPtx;
    } else if (opaque_type(t)) {
      d->opaque = true;
      return Error::kNone;
    } else if (!ptx_vector(t, &d->vector) && !ptx_type(t, &d->type)) {
      if (!is_name(t)) return Error::kBadPtx;
      if (t.size() > kMaxNameBytes) return Error::kTooLarge;
      d->name = t;
      break;
    }
  }
  if (d->type.size == 0) return Error::kBadPtx;
  d->scalars = d->vector;
  return parse_dims(lex, d);
}

// One literal as `size` little-endian bytes: integers, or 0f / 0d bit patterns
// of the matching width. False for anything else.
bool literal(std::string_view t, bool negative, const PtxType& type, uint64_t* bits) {
  const bool f32 = t.size() == 10 && (t.starts_with("0f") || t.starts_with("0F"));
  const bool f64 = t.size() == 18 && (t.starts_with("0d") || t.starts_with("0D"));
  if (f32 || f64) {
    if (negative || type.size != (f32 ? 4u : 8u)) return false;
    return parse_unsigned(std::string("0x").append(t.substr(2)), bits);
  }
  if (type.floating || !parse_unsigned(t, bits)) return false;
  if (negative) *bits = ~*bits + 1;
  return true;
}

// Through the closing `;`. Appends each scalar's bytes to *bytes while every
// value is a literal; on the first that is not, sets *known = false.
Error parse_initializer(PtxLexer& lex, const VarDecl& d, ModuleBuilder* budget,
                        std::vector<uint8_t>* bytes, bool* known) {
  int depth = 0;
  uint64_t count = 0;
  for (std::string_view t = lex.next(); t != ";"; t = lex.next()) {
    if (t.empty() || (t == "}" && depth == 0)) return Error::kBadPtx;
    if (t == "{" || t == "}") {
      depth += t == "{" ? 1 : -1;
      continue;
    }
    if (t == "," || !*known) continue;
    const bool negative = t == "-";
    if (negative) {
      t = lex.next();
      if (t.empty() || t == ";" || t == "," || t == "{" || t == "}") return Error::kBadPtx;
    }
    uint64_t bits = 0;
    if (!literal(t, negative, d.type, &bits)) {
      *known = false;
      continue;
    }
    if (!d.unsized && count == d.scalars) return Error::kBadPtx;  // more values than elements
    if (Error e = budget->charge(d.type.size); e != Error::kNone) return e;
    for (uint32_t i = 0; i < d.type.size; ++i) bytes->push_back(static_cast<uint8_t>(i < 8 ? bits >> (8 * i) : 0));
    ++count;
  }
  return depth == 0 ? Error::kNone : Error::kBadPtx;
}

}  // namespace

Error parse_variable(PtxLexer& lex, bool constant, bool declaration_only, bool visible, ModuleBuilder* out) {
  VarDecl d;
  if (Error e = parse_declarator(lex, &d); e != Error::kNone) return e;
  if (d.opaque) return skip_to_semicolon(lex);

  std::vector<uint8_t> init;
  bool known = true, initialized = false;
  const std::string_view t = lex.next();
  if (t == "=") {
    initialized = true;
    if (Error e = parse_initializer(lex, d, out, &init, &known); e != Error::kNone) return e;
  } else if (t != ";") {
    return Error::kBadPtx;  // several declarators in one statement: nvcc does not emit them
  }
  if (d.unsized && (!initialized || !known)) return Error::kBadPtx;  // size unknowable
  if (declaration_only) return Error::kNone;

  Variable v;
  v.name = std::string(d.name);
  v.managed = d.managed;
  v.constant = constant;
  const uint64_t per_outer = d.scalars * d.type.size;  // checked in parse_dims
  if (d.unsized && per_outer > kMaxImageBytes) return Error::kTooLarge;
  v.size = d.unsized ? (init.size() + per_outer - 1) / per_outer * per_outer : per_outer;
  const bool nonzero = std::any_of(init.begin(), init.end(), [](uint8_t b) { return b != 0; });
  if (known && nonzero) {
    if (Error e = out->charge(v.size - init.size()); e != Error::kNone) return e;
    init.resize(v.size, 0);
    v.init = std::move(init);
  }
  // Without .visible the name is the object's own (a static variable, printf's $str): after
  // nvlink merged objects, the linked cubin may hold another of that name.
  return out->add_variable(std::move(v), !visible);
}

}  // namespace vgpu::fatbin::detail
