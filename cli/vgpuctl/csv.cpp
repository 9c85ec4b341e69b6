#include "csv.h"

namespace vgpu::ctl {
namespace {

class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}

  bool done() const { return i_ >= text_.size(); }
  int line() const { return line_; }
  // At LF, CRLF, or a CR that ends the text.
  bool at_line_end() const {
    if (done()) return false;
    if (text_[i_] == '\n') return true;
    return text_[i_] == '\r' && (i_ + 1 == text_.size() || text_[i_ + 1] == '\n');
  }
  void skip_line_end() {
    if (text_[i_] == '\r') ++i_;
    if (!done() && text_[i_] == '\n') ++i_;
    ++line_;
  }

  // One record from here; false with `why` on a malformed field.
  bool record(CsvRecord* out, std::string* why) {
    out->line = line_;
    out->fields.clear();
    for (;;) {
      std::string field;
      const bool is_quoted = !done() && text_[i_] == '"';
      if (!(is_quoted ? quoted(&field, why) : plain(&field, why))) return false;
      out->fields.push_back(std::move(field));
      if (!done() && text_[i_] == ',') {
        ++i_;
        continue;
      }
      if (at_line_end()) skip_line_end();
      return true;
    }
  }

 private:
  bool plain(std::string* field, std::string* why) {
    while (!done() && text_[i_] != ',' && !at_line_end()) {
      if (text_[i_] == '"') {
        *why = where() +
               "a quote inside an unquoted field (quote the whole field and double "
               "the quotes inside it)";
        return false;
      }
      *field += text_[i_++];
    }
    return true;
  }

  bool quoted(std::string* field, std::string* why) {
    const int opened = line_;
    ++i_;  // the opening quote
    for (;;) {
      if (done()) {
        *why = "line " + std::to_string(opened) + ": a quoted field is not closed";
        return false;
      }
      const char c = text_[i_++];
      if (c == '"') {
        if (!done() && text_[i_] == '"') {
          *field += '"';
          ++i_;
          continue;
        }
        break;
      }
      if (c == '\n') ++line_;
      *field += c;
    }
    if (!done() && text_[i_] != ',' && !at_line_end()) {
      *why = where() +
             "text after a closing quote (quote the whole field and double the quotes "
             "inside it)";
      return false;
    }
    return true;
  }

  std::string where() const { return "line " + std::to_string(line_) + ": "; }

  std::string_view text_;
  size_t i_ = 0;
  int line_ = 1;
};

}  // namespace

bool parse_csv(std::string_view text, std::vector<CsvRecord>* out, std::string* why) {
  out->clear();
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  Reader in(text);
  while (!in.done()) {
    if (in.at_line_end()) {  // a blank line
      in.skip_line_end();
      continue;
    }
    CsvRecord r;
    if (!in.record(&r, why)) return false;
    out->push_back(std::move(r));
  }
  return true;
}

std::string csv_field(std::string_view field) {
  if (field.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(field);
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string csv_line(const std::vector<std::string>& fields) {
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + csv_field(fields[i]);
  return out;
}

}  // namespace vgpu::ctl
