// Splits PTX text into tokens: words (directives, names, numbers: runs of
// letters, digits and _ $ % .), string literals, and single punctuation
// characters. Comments and white space are skipped. Never reads past the text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace vgpu::fatbin::detail {

class PtxLexer {
 public:
  explicit PtxLexer(std::string_view text) : text_(text) {}

  // The next token, or an empty view at the end of the text.
  std::string_view next();
  std::string_view peek();

 private:
  void skip_blank();
  std::string_view text_;
  size_t pos_ = 0;
};

bool is_name(std::string_view token);  // a PTX identifier (not a directive, number or punctuation)

// Unsigned integer literal: decimal, 0x hex, 0b binary, 0 octal; optional U
// suffix. False on overflow or anything else.
bool parse_unsigned(std::string_view token, uint64_t* out);

}  // namespace vgpu::fatbin::detail
