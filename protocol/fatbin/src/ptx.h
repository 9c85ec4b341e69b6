// Kernels and variables from PTX text: the only source for a PTX-only fat
// binary (JIT), checked against the cubins when both describe a name.
//
// Kernels: `.entry name(.param <qualifiers> name[dims], ...)`. Each parameter
// sits at the next multiple of its alignment (`.align N` when given, else its
// element size times vector width); param_bytes is the end of the last one.
// For a pointer (`.ptr .global .align N`) the .align is the pointee's.
//
// Variables: module-scope `.global` / `.const` declarations (not `.extern`,
// not .texref/.samplerref/.surfref). Initializers made of integer literals
// and 0f/0d float bit patterns are turned into bytes; any other initializer
// (addresses such as `generic(sym)+4`, decimal floats) leaves `init` empty.
#pragma once

#include "bytes.h"
#include "module_builder.h"
#include "ptx_lexer.h"

namespace vgpu::fatbin::detail {

// Reads an image's text (up to its first NUL) into `out`.
Error read_ptx(Bytes image, ModuleBuilder* out);

// After the `.entry` token: the kernel's name and parameter list.
Error parse_entry(PtxLexer& lex, Kernel* out);

// After the `.global` / `.const` token: one declaration through its `;`.
// Adds it to `out` unless `declaration_only` (an .extern) or not a variable;
// without `visible` (.visible, .weak, .common) as the object's own name, which
// another image of the module may also hold (ModuleBuilder::add_variable's local).
Error parse_variable(PtxLexer& lex, bool constant, bool declaration_only, bool visible, ModuleBuilder* out);

}  // namespace vgpu::fatbin::detail
