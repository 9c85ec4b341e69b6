// The usage report as one self-contained HTML file: inline CSS, two inline
// SVG charts (GPU time this period against each student's quota; GPU time
// over time, stacked per student) and a sortable table. No network, no
// external files; the small inline script only sorts the table and marks the
// page as rendered (data-charts on <body>) so tests can check it ran.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace vgpu::ctl {

std::string html_report(const nlohmann::json& report);

}  // namespace vgpu::ctl
