#include "ptx_lexer.h"

namespace vgpu::fatbin::detail {
namespace {

bool word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '$' || c == '%' || c == '.';
}

bool digit_in(char c, unsigned base, unsigned* v) {
  unsigned d = 0;
  if (c >= '0' && c <= '9') d = static_cast<unsigned>(c - '0');
  else if (c >= 'a' && c <= 'f') d = static_cast<unsigned>(c - 'a' + 10);
  else if (c >= 'A' && c <= 'F') d = static_cast<unsigned>(c - 'A' + 10);
  else return false;
  *v = d;
  return d < base;
}

}  // namespace

// Plain character tests throughout: this loop sees every byte of the text.
void PtxLexer::skip_blank() {
  const char* p = text_.data();
  const size_t n = text_.size();
  while (pos_ < n) {
    const char c = p[pos_];
    const char d = pos_ + 1 < n ? p[pos_ + 1] : '\0';
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
      ++pos_;
    } else if (c == '/' && d == '/') {
      const size_t end = text_.find('\n', pos_);
      pos_ = end == std::string_view::npos ? n : end + 1;
    } else if (c == '/' && d == '*') {
      const size_t end = text_.find("*/", pos_ + 2);
      pos_ = end == std::string_view::npos ? n : end + 2;
    } else {
      return;
    }
  }
}

std::string_view PtxLexer::next() {
  skip_blank();
  const char* p = text_.data();
  const size_t n = text_.size();
  if (pos_ >= n) return {};
  const size_t start = pos_;
  if (word_char(p[pos_])) {
    while (pos_ < n && word_char(p[pos_])) ++pos_;
  } else if (p[pos_] == '"') {
    for (++pos_; pos_ < n && p[pos_] != '"'; ++pos_) {
      if (p[pos_] == '\\') ++pos_;  // the escaped character (the loop bound checks it)
    }
    pos_ = pos_ < n ? pos_ + 1 : n;
  } else {
    ++pos_;
  }
  return std::string_view(p + start, pos_ - start);
}

std::string_view PtxLexer::peek() {
  const size_t saved = pos_;
  const std::string_view t = next();
  pos_ = saved;
  return t;
}

bool is_name(std::string_view t) {
  if (t.empty() || t[0] == '.' || (t[0] >= '0' && t[0] <= '9') || !word_char(t[0])) return false;
  return t.find('.') == std::string_view::npos;
}

bool parse_unsigned(std::string_view t, uint64_t* out) {
  if (!t.empty() && (t.back() == 'U' || t.back() == 'u')) t.remove_suffix(1);
  if (t.empty()) return false;
  unsigned base = 10;
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) base = 16, t.remove_prefix(2);
  else if (t.size() > 2 && t[0] == '0' && (t[1] == 'b' || t[1] == 'B')) base = 2, t.remove_prefix(2);
  else if (t.size() > 1 && t[0] == '0') base = 8, t.remove_prefix(1);
  uint64_t v = 0;
  for (char c : t) {
    unsigned d = 0;
    if (!digit_in(c, base, &d) || v > (UINT64_MAX - d) / base) return false;
    v = v * base + d;
  }
  *out = v;
  return true;
}

}  // namespace vgpu::fatbin::detail
