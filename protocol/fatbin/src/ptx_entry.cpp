#include "ptx.h"

#include <algorithm>

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

// The performance directives between the parameters and the body (.maxntid,
// .reqntid, .minnctapersm, .reqnctapercluster, ...): the cluster shape and
// the block's thread bound matter here; the rest is the device's business.
Error parse_directives(PtxLexer& lex, Kernel* k) {
  for (std::string_view t = lex.peek(); !t.empty() && t != "{" && t != ";"; t = lex.peek()) {
    lex.next();
    if (t == ".maxntid" || t == ".reqntid") {
      uint64_t threads = 1;
      for (int i = 0; i < 3; ++i) {
        uint64_t n = 0;
        if (!parse_unsigned(lex.next(), &n) || n == 0 || n > kMaxThreadBound) return Error::kBadPtx;
        threads = std::min<uint64_t>(threads * n, kMaxThreadBound);
        if (lex.peek() != ",") break;
        lex.next();
      }
      // Both may appear; the smaller bound holds.
      const auto bound = static_cast<uint32_t>(threads);
      k->max_threads = k->max_threads == 0 ? bound : std::min(k->max_threads, bound);
      continue;
    }
    if (t != ".reqnctapercluster") continue;
    uint32_t dims[3] = {1, 1, 1};
    for (int i = 0; i < 3; ++i) {
      uint64_t n = 0;
      if (!parse_unsigned(lex.next(), &n) || n > kMaxClusterBlocks) return Error::kBadPtx;
      dims[i] = static_cast<uint32_t>(n);
      if (lex.peek() != ",") break;
      lex.next();
    }
    if (!valid_cluster(dims)) return Error::kBadPtx;
    std::copy_n(dims, 3, k->cluster);
  }
  return Error::kNone;
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
  if (Error e = parse_directives(lex, &k); e != Error::kNone) return e;
  k.name = std::string(name);
  *out = std::move(k);
  return Error::kNone;
}

}  // namespace vgpu::fatbin::detail
