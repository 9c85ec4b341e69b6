#include "table.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "csv.h"
#include "vgpu/policy/units.h"

namespace vgpu::ctl {
namespace {

// A number column's cell value from text: "12" and "0.5" are numbers; "-",
// "" and anything else are none.
nlohmann::json as_number(const std::string& s) {
  if (s.empty()) return nullptr;
  char* end = nullptr;
  errno = 0;
  const long long i = std::strtoll(s.c_str(), &end, 10);
  if (*end == '\0' && errno == 0) return i;
  errno = 0;
  const double d = std::strtod(s.c_str(), &end);
  if (*end == '\0' && errno == 0) return d;
  return nullptr;
}

// A value as one CSV field: strings as they are, numbers as JSON writes them,
// none as an empty field.
std::string machine_text(const nlohmann::json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

// A cell value in a JSON row: "" is none (null), like "-" in the table.
nlohmann::ordered_json ordered(const nlohmann::json& v) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    return s.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(s);
  }
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) return v.get<double>();
  if (v.is_boolean()) return v.get<bool>();
  return nullptr;
}

}  // namespace

bool parse_format(std::string_view text, Format* out) {
  if (text == "table")
    *out = Format::kTable;
  else if (text == "csv")
    *out = Format::kCsv;
  else if (text == "json")
    *out = Format::kJson;
  else
    return false;
  return true;
}

Cell optional_cell(const std::string& text) {
  if (text.empty() || text == "-") return {"-", nullptr};
  return text;
}

Cell time_cell(int64_t t) {
  if (t == 0) return {"-", nullptr};
  std::string iso = policy::format_time(t);
  std::replace(iso.begin(), iso.end(), ' ', 'T');
  return {when(t), iso + "Z"};
}

Cell names_cell(const std::vector<std::string>& names) {
  return {join(names, ","), join(names, " ")};
}

void Table::add(std::vector<Cell> row) {
  row.resize(columns_.size(), Cell("", nullptr));
  for (size_t i = 0; i < columns_.size(); ++i) {
    nlohmann::json& v = row[i].value;
    if (columns_[i].kind == Column::Kind::kNumber && v.is_string())
      v = as_number(v.get<std::string>());
    if (columns_[i].kind == Column::Kind::kText && v.is_number()) v = v.dump();
  }
  rows_.push_back(std::move(row));
}

void Table::print(Format format, bool header, FILE* out) const {
  switch (format) {
    case Format::kTable:
      print_aligned(header, out);
      return;
    case Format::kCsv:
      print_csv(header, out);
      return;
    case Format::kJson:
      std::fprintf(out, "%s\n", to_json().dump(2).c_str());
      return;
  }
}

void Table::print_aligned(bool header, FILE* out) const {
  std::vector<size_t> shown;
  for (size_t i = 0; i < columns_.size(); ++i) {
    if (columns_[i].shown != Column::Shown::kMachineOnly) shown.push_back(i);
  }
  std::vector<size_t> width(columns_.size());
  for (size_t i : shown) {
    width[i] = header ? columns_[i].title.size() : 0;
    for (const auto& row : rows_) width[i] = std::max(width[i], row[i].text.size());
  }
  auto line = [&](auto cell_of) {
    std::string text;
    for (size_t k = 0; k < shown.size(); ++k) {
      const size_t i = shown[k];
      const std::string& cell = cell_of(i);
      text += cell;
      if (k + 1 < shown.size()) text += std::string(width[i] - cell.size() + 2, ' ');
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    std::fprintf(out, "%s\n", text.c_str());
  };
  if (header) line([&](size_t i) -> const std::string& { return columns_[i].title; });
  for (const auto& row : rows_) line([&](size_t i) -> const std::string& { return row[i].text; });
}

void Table::print_csv(bool header, FILE* out) const {
  std::vector<std::string> fields;
  auto emit = [&] {
    std::fprintf(out, "%s\n", csv_line(fields).c_str());
    fields.clear();
  };
  if (header) {
    for (const Column& c : columns_) {
      if (c.shown != Column::Shown::kTableOnly) fields.push_back(c.key);
    }
    emit();
  }
  for (const auto& row : rows_) {
    for (size_t i = 0; i < columns_.size(); ++i) {
      if (columns_[i].shown != Column::Shown::kTableOnly)
        fields.push_back(machine_text(row[i].value));
    }
    emit();
  }
}

nlohmann::ordered_json Table::to_json() const {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& row : rows_) {
    nlohmann::ordered_json object = nlohmann::ordered_json::object();
    for (size_t i = 0; i < columns_.size(); ++i) {
      if (columns_[i].shown == Column::Shown::kTableOnly) continue;
      object[columns_[i].key] = ordered(row[i].value);
    }
    rows.push_back(std::move(object));
  }
  return rows;
}

std::string when(int64_t t) { return t ? policy::format_time(t) : "-"; }

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

std::string set_text(const nlohmann::json& set) {
  std::string out;
  for (const char* key : {"gpu_time", "memory", "weight", "on_exhaust", "placement"}) {
    if (!set.contains(key)) continue;
    const nlohmann::json& v = set[key];
    std::string flag = key;
    std::replace(flag.begin(), flag.end(), '_', '-');
    out +=
        (out.empty() ? "" : " ") + flag + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out.empty() ? "-" : out;
}

}  // namespace vgpu::ctl
