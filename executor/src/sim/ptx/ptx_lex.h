// Internal to the parser: the tokenizer, literal and name tables, and opcode decoding.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptx_program.h"

namespace vgpu::executor::sim::ptx {

struct Token {
  enum Kind : uint8_t { kIdent, kNumber, kString, kPunct, kEnd } kind;
  std::string_view text;
  uint32_t line;
};

// Splits the text into tokens; comments vanish. false and *why (with a line) on a bad character.
bool lex(std::string_view s, std::vector<Token>* out, std::string* why);
// Integer or float literal -> bits; *int_literal tells whether a float instruction must convert it.
bool parse_number(std::string_view s, uint64_t* bits, bool* int_literal);
std::optional<Type> type_of(std::string_view s);  // "u32" -> Type::kU32
std::optional<Special> special_of(std::string_view s);  // "%tid.x" -> Special::kTidX
// Decodes a dotted opcode ("ld.global.nc.v2.f64") into the instruction's fields; false for an
// opcode or modifier we do not know (the instruction is then Op::kUnsupported).
bool decode_opcode(std::string_view text, Instr* in);
// wmma.load/store/mma (ptx_wmma.cpp): false for a form it does not run.
bool decode_wmma(std::string_view text, Instr* in);

}  // namespace vgpu::executor::sim::ptx
