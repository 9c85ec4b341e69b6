// vgpuctl's listings, in one place: every command that lists things builds a
// Table and prints it as -o asks: aligned columns for people (`table`), or
// CSV or JSON for programs. Each column has a title for people ("GPU TIME")
// and a key for programs ("gpu_ns"); each cell has the text people read and
// the value programs get ("1h30m" and 5400000000000).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace vgpu::ctl {

enum class Format : uint8_t {
  kTable,  // aligned columns, a header row of titles
  kCsv,    // RFC 4180, a header row of keys
  kJson,   // an array of objects, one per row, keyed by column key
};
// "table", "csv", "json"; false for anything else.
bool parse_format(std::string_view text, Format* out);

struct Column {
  enum class Kind : uint8_t {
    kText,    // JSON: a string (null when empty)
    kNumber,  // JSON: a number (null when the cell has none, e.g. "-")
  };
  enum class Shown : uint8_t { kEverywhere, kTableOnly, kMachineOnly };
  std::string title;  // the aligned table's header
  std::string key;    // the CSV header and the JSON key: snake_case
  Kind kind = Kind::kText;
  Shown shown = Shown::kEverywhere;
};
inline Column text_column(std::string title, std::string key) {
  return {std::move(title), std::move(key), Column::Kind::kText, Column::Shown::kEverywhere};
}
inline Column number_column(std::string title, std::string key) {
  return {std::move(title), std::move(key), Column::Kind::kNumber, Column::Shown::kEverywhere};
}
// A column only people see (a cell that sums up several machine columns).
inline Column table_only(std::string title) {
  return {std::move(title), "", Column::Kind::kText, Column::Shown::kTableOnly};
}
// A column only programs get.
inline Column machine_only(std::string key, Column::Kind kind = Column::Kind::kNumber) {
  return {"", std::move(key), kind, Column::Shown::kMachineOnly};
}

struct Cell {
  std::string text;      // what the aligned table shows
  nlohmann::json value;  // what CSV and JSON carry: a string, a number, or null (none)

  Cell(std::string s) : text(s), value(std::move(s)) {}  // NOLINT: the same for both
  Cell(const char* s) : Cell(std::string(s)) {}          // NOLINT
  Cell(std::nullptr_t) : text("-"), value(nullptr) {}    // NOLINT: none, "-" for people
  // A value from a daemon answer: strings and numbers as they are.
  Cell(const nlohmann::json& v)  // NOLINT
      : text(v.is_string() ? v.get<std::string>()
             : v.is_null() ? ""
                           : v.dump()),
        value(v) {}
  template <class T>
  requires std::is_arithmetic_v<T> Cell(T number) : Cell(nlohmann::json(number)) {}  // NOLINT
  Cell(std::string shown, nlohmann::json machine)
      : text(std::move(shown)), value(std::move(machine)) {}
};

// Text that may say "none": "" and "-" show as "-" and are null for programs.
Cell optional_cell(const std::string& text);

// A time: "2025-01-06 14:30:05" for people, "2025-01-06T14:30:05Z" for
// programs; "-" and null for 0 (never).
Cell time_cell(int64_t unix_seconds);
// VM names: "a,b" for people, "a b" for programs (no quoting needed).
Cell names_cell(const std::vector<std::string>& names);

class Table {
 public:
  explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}
  // One cell per column. A number column's cell whose value is text is read
  // as a number ("12"), or is null if it is none ("-").
  void add(std::vector<Cell> row);
  bool empty() const { return rows_.empty(); }
  size_t size() const { return rows_.size(); }
  // `header`: the header row (table and CSV; JSON has none).
  void print(Format format, bool header, FILE* out = stdout) const;
  // The rows as JSON objects, keyed by column key in column order.
  nlohmann::ordered_json to_json() const;

 private:
  void print_aligned(bool header, FILE* out) const;
  void print_csv(bool header, FILE* out) const;

  std::vector<Column> columns_;
  std::vector<std::vector<Cell>> rows_;
};

// "2025-01-06 14:30:05" (UTC), or "-" for 0.
std::string when(int64_t unix_seconds);
std::string join(const std::vector<std::string>& items, const std::string& sep = ",");
// What one quota level sets, as the flags that set it: "gpu-time=2h/week memory=4GiB", or "-".
std::string set_text(const nlohmann::json& set);

}  // namespace vgpu::ctl
