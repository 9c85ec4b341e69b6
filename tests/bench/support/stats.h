// Summaries of timing samples, and the one line format every benchmark uses
// to print a figure next to its baseline, the ratio and the target.
#pragma once

#include <string>
#include <vector>

namespace vgpu::bench {

struct Summary {
  double median = 0;
  double p99 = 0;
  double min = 0;
  double mean = 0;
  size_t count = 0;
};

// Sorts a copy; an empty input gives zeros.
Summary summarize(std::vector<double> samples);

// One line: "  <what>  <value>  target <target>  met|NOT met" (no verdict
// when the target is empty); returns `met`, for the caller's exit status.
bool report(const std::string& what, const std::string& value, const std::string& target, bool met);
// The same with the value printed as a ratio, "1.23x".
bool report_ratio(const std::string& what, double ratio, const std::string& target, bool met);

// The machine and its load, for the header of every benchmark's output.
std::string machine_line();

}  // namespace vgpu::bench
