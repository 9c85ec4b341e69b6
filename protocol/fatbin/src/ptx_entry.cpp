#include "ptx.h"

#include "ptx_types.h"

namespace vgpu::fatbin::detail {
namespace {

struct ParamDecl {
  uint64_t align = 0;  // explicit .align of the parameter itself, 0 when absent
  PtxType type;
  uint32_t vector = 1;
  uint64_t size = 0;   // bytes, all dimensions included
};

// `.param <qualifiers> name [dims]`, up to (not including) the `,` or `)`.
Error parse_param(PtxLexer& lex, ParamDecl* d) {
  if (lex.next() != ".param") return Error::kBadPtx;
  bool pointer = false;
  for (;;) {
    const std::string_view t = lex.next();
    if (t == ".align") {
      uint64_t a = 0;
      if (!parse_unsigned(lex.next(), &a) || !valid_alignment(a)) return Error::kBadPtx;
      if (!pointer) d->align = a;  // after .ptr it is the pointee's alignment
    } else if (t == ".ptr") {
      pointer = true;
    } else if (!(pointer && ptx_state_space(t)) && !ptx_vector(t, &d->vector) &&
               !ptx_type(t, &d->type)) {
      if (!is_name(t)) return Error::kBadPtx;
      break;  // the parameter's name
    }
  }
  if (d->type.size == 0) return Error::kBadPtx;
  d->size = uint64_t{d->type.size} * d->vector;
  while (lex.peek() == "[") {
    lex.next();
    uint64_t n = 0;
    if (!parse_unsigned(lex.next(), &n) || n == 0 || lex.next() != "]") return Error::kBadPtx;
    if (n > kMaxParamBytes || d->size * n > kMaxParamBytes) return Error::kTooLarge;
    d->size *= n;
  }
  return d->size > kMaxParamBytes ? Error::kTooLarge : Error::kNone;
}

}  // namespace

Error parse_entry(PtxLexer& lex, Kernel* out) {
  const std::string_view name = lex.next();
  if (!is_name(name)) return Error::kBadPtx;
  if (name.size() > kMaxNameBytes) return Error::kTooLarge;
  Kernel k;
  if (lex.peek() == "(") {
    lex.next();
    uint64_t end = 0;
    bool more = lex.peek() != ")";
    if (!more) lex.next();
    while (more) {
      if (k.params.size() >= kMaxParams) return Error::kTooLarge;
      ParamDecl d;
      if (Error e = parse_param(lex, &d); e != Error::kNone) return e;
      const uint64_t align = d.align != 0 ? d.align : uint64_t{d.type.size} * d.vector;
      const uint64_t offset = (end + align - 1) / align * align;  // all terms <= 2^17: no overflow
      end = offset + d.size;
      if (end > kMaxParamBytes) return Error::kTooLarge;
      k.params.push_back(Param{static_cast<uint32_t>(offset), static_cast<uint32_t>(d.size)});
      const std::string_view sep = lex.next();
      if (sep != "," && sep != ")") return Error::kBadPtx;
      more = sep == ",";
    }
    k.param_bytes = static_cast<uint32_t>(end);
  }
  k.name = std::string(name);
  *out = std::move(k);
  return Error::kNone;
}

}  // namespace vgpu::fatbin::detail
