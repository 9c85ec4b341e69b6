#include "ptx.h"

#include <cstring>

namespace vgpu::fatbin::detail {

// Walks the module scope (outside every {} and ()), where kernels and
// variables are declared; function bodies and other directives are skipped.
Error read_ptx(Bytes image, ModuleBuilder* out) {
  const auto* text = reinterpret_cast<const char*>(image.data());
  const void* nul = image.empty() ? nullptr : std::memchr(text, 0, image.size());
  const size_t length = nul ? static_cast<size_t>(static_cast<const char*>(nul) - text) : image.size();
  PtxLexer lex(std::string_view(text, length));
  // printf and assert compile to calls of the external functions vprintf and
  // __assertfail.
  const std::string_view all(text, length);
  if (all.find("vprintf") != std::string_view::npos || all.find("__assertfail") != std::string_view::npos)
    out->calls_printf();

  uint64_t braces = 0, parens = 0;
  bool external = false;  // after .extern: a declaration, defined elsewhere
  bool visible = false;   // after .visible: a name other objects (and the host) link to
  for (std::string_view t = lex.next(); !t.empty(); t = lex.next()) {
    const char c = t[0];
    if (t.size() == 1 && (c == '{' || c == '(')) {
      ++(c == '{' ? braces : parens);
      continue;
    }
    if (t.size() == 1 && (c == '}' || c == ')')) {
      uint64_t& depth = c == '}' ? braces : parens;
      if (depth == 0) return Error::kBadPtx;
      --depth;
      continue;
    }
    if (braces != 0 || parens != 0) continue;
    if (c != '.') {
      external = visible = false;
      continue;
    }
    if (t == ".entry") {
      Kernel k;
      if (Error e = parse_entry(lex, &k); e != Error::kNone) return e;
      if (Error e = out->add_kernel(std::move(k)); e != Error::kNone) return e;
    } else if (t == ".global" || t == ".const") {
      if (Error e = parse_variable(lex, t == ".const", external, visible, out); e != Error::kNone) return e;
    }
    if (t == ".extern") {
      external = true;
    } else if (t == ".visible" || t == ".weak" || t == ".common") {
      visible = true;
    } else {
      external = visible = false;
    }
  }
  return braces == 0 && parens == 0 ? Error::kNone : Error::kBadPtx;
}

}  // namespace vgpu::fatbin::detail
