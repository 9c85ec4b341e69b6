// Tokens, literals and the names of types and special registers.
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "ptx_lex.h"

namespace vgpu::executor::sim::ptx {
namespace {

bool ident_start(char c) { return isalpha((unsigned char)c) || c == '_' || c == '$' || c == '%' || c == '.'; }
bool ident_char(char c) { return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '.' || c == '%'; }

}  // namespace

// Splits the text into tokens; comments vanish. `::` stays inside identifiers (ld.shared::cta).
bool lex(std::string_view s, std::vector<Token>* out, std::string* why) {
  uint32_t line = 1;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (c == '\n') { ++line; ++i; continue; }
    if (isspace((unsigned char)c)) { ++i; continue; }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n') ++i;
      continue;
    }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      i += 2;
      while (i + 1 < s.size() && !(s[i] == '*' && s[i + 1] == '/')) { if (s[i] == '\n') ++line; ++i; }
      i += 2;
      continue;
    }
    size_t start = i;
    if (ident_start(c)) {
      while (i < s.size() && (ident_char(s[i]) || (s[i] == ':' && i + 1 < s.size() && s[i + 1] == ':'))) i += (s[i] == ':') ? 2 : 1;
      out->push_back({Token::kIdent, s.substr(start, i - start), line});
    } else if (isdigit((unsigned char)c)) {
      while (i < s.size() && (isalnum((unsigned char)s[i]) || s[i] == '.')) ++i;
      out->push_back({Token::kNumber, s.substr(start, i - start), line});
    } else if (c == '"') {
      ++i;
      while (i < s.size() && s[i] != '"' && s[i] != '\n') ++i;
      if (i >= s.size() || s[i] != '"') { *why = "line " + std::to_string(line) + ": unterminated string"; return false; }
      ++i;
      out->push_back({Token::kString, s.substr(start, i - start), line});
    } else if (strchr(",;{}[]()+-|!@<>=:", c)) {
      ++i;
      out->push_back({Token::kPunct, s.substr(start, 1), line});
    } else {
      *why = "line " + std::to_string(line) + ": unexpected character '" + std::string(1, c) + "'";
      return false;
    }
  }
  out->push_back({Token::kEnd, "", line});
  return true;
}

std::optional<Type> type_of(std::string_view s) {
  static const std::pair<const char*, Type> kTypes[] = {
      {"pred", Type::kPred}, {"b8", Type::kB8}, {"u8", Type::kU8}, {"s8", Type::kS8},
      {"b16", Type::kB16}, {"u16", Type::kU16}, {"s16", Type::kS16}, {"f16", Type::kF16},
      {"b32", Type::kB32}, {"u32", Type::kU32}, {"s32", Type::kS32}, {"f32", Type::kF32},
      {"b64", Type::kB64}, {"u64", Type::kU64}, {"s64", Type::kS64}, {"f64", Type::kF64},
      {"f16x2", Type::kF16x2}, {"bf16", Type::kBF16}, {"bf16x2", Type::kBF16x2}};
  for (auto& [n, t] : kTypes) if (s == n) return t;
  return std::nullopt;
}

std::optional<Special> special_of(std::string_view s) {
  static const std::pair<const char*, Special> kSpecials[] = {
      {"%tid.x", Special::kTidX}, {"%tid.y", Special::kTidY}, {"%tid.z", Special::kTidZ},
      {"%ntid.x", Special::kNtidX}, {"%ntid.y", Special::kNtidY}, {"%ntid.z", Special::kNtidZ},
      {"%ctaid.x", Special::kCtaidX}, {"%ctaid.y", Special::kCtaidY}, {"%ctaid.z", Special::kCtaidZ},
      {"%nctaid.x", Special::kNctaidX}, {"%nctaid.y", Special::kNctaidY}, {"%nctaid.z", Special::kNctaidZ},
      {"%laneid", Special::kLaneid}, {"%warpid", Special::kWarpid}, {"%nwarpid", Special::kNwarpid},
      {"%smid", Special::kSmid}, {"%nsmid", Special::kNsmid}, {"%gridid", Special::kGridid},
      {"%clock", Special::kClock}, {"%clock64", Special::kClock64}, {"%globaltimer", Special::kGlobaltimer},
      {"%lanemask_eq", Special::kLanemaskEq}, {"%lanemask_le", Special::kLanemaskLe},
      {"%lanemask_lt", Special::kLanemaskLt}, {"%lanemask_ge", Special::kLanemaskGe},
      {"%lanemask_gt", Special::kLanemaskGt}, {"%dynamic_smem_size", Special::kDynamicSmemSize},
      {"%envreg1", Special::kEnvreg1}, {"%envreg2", Special::kEnvreg2}};
  for (auto& [n, t] : kSpecials) if (s == n) return t;
  return std::nullopt;
}

// Integer or float literal -> bits. `int_literal` tells the caller whether a float op must convert.
bool parse_number(std::string_view s, uint64_t* bits, bool* int_literal) {
  std::string t(s);
  if (!t.empty() && (t.back() == 'U' || t.back() == 'u')) t.pop_back();
  *int_literal = true;
  errno = 0;
  char* end = nullptr;
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'f' || t[1] == 'F' || t[1] == 'd' || t[1] == 'D')) {
    *int_literal = false;
    *bits = strtoull(t.c_str() + 2, &end, 16);
  } else if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
    *bits = strtoull(t.c_str() + 2, &end, 16);
  } else if (t.size() > 2 && t[0] == '0' && (t[1] == 'b' || t[1] == 'B')) {
    *bits = strtoull(t.c_str() + 2, &end, 2);
  } else if (t.find_first_of(".eE") != std::string::npos) {
    *int_literal = false;
    double d = strtod(t.c_str(), &end);
    memcpy(bits, &d, 8);
  } else if (t.size() > 1 && t[0] == '0') {
    *bits = strtoull(t.c_str(), &end, 8);
  } else {
    *bits = strtoull(t.c_str(), &end, 10);
  }
  return end && *end == 0 && errno == 0 && !t.empty();
}


}  // namespace vgpu::executor::sim::ptx
