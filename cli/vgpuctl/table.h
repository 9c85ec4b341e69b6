// Plain-text tables (aligned columns) and CSV, for vgpuctl's output.
#pragma once

#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace vgpu::ctl {

class Table {
 public:
  explicit Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  bool empty() const { return rows_.empty(); }
  void print(FILE* out = stdout) const;
  void print_csv(FILE* out = stdout) const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

// "2025-01-06 14:30:05" (UTC), or "-" for 0.
std::string when(int64_t unix_seconds);
std::string join(const std::vector<std::string>& items, const std::string& sep = ",");
// What one quota level sets, as the flags that set it: "gpu-time=2h/week memory=4GiB", or "-".
std::string set_text(const nlohmann::json& set);

}  // namespace vgpu::ctl
