#include "table.h"

#include <algorithm>

#include "vgpu/policy/units.h"

namespace vgpu::ctl {
namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

void Table::print(FILE* out) const {
  std::vector<size_t> width(headers_.size());
  for (size_t i = 0; i < headers_.size(); ++i) width[i] = headers_[i].size();
  for (const auto& row : rows_) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], row[i].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (size_t i = 0; i < headers_.size(); ++i) {
      const std::string cell = i < cells.size() ? cells[i] : "";
      text += cell;
      if (i + 1 < headers_.size()) text += std::string(width[i] - cell.size() + 2, ' ');
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    std::fprintf(out, "%s\n", text.c_str());
  };
  line(headers_);
  for (const auto& row : rows_) line(row);
}

void Table::print_csv(FILE* out) const {
  auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (size_t i = 0; i < cells.size(); ++i) text += (i ? "," : "") + csv_field(cells[i]);
    std::fprintf(out, "%s\n", text.c_str());
  };
  line(headers_);
  for (const auto& row : rows_) line(row);
}

std::string when(int64_t t) { return t ? policy::format_time(t) : "-"; }

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

std::string set_text(const nlohmann::json& set) {
  std::string out;
  for (const char* key : {"gpu_time", "memory", "weight", "on_exhaust"}) {
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
