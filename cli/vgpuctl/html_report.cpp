#include "html_report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "table.h"
#include "vgpu/policy/time_zone.h"
#include "vgpu/policy/units.h"

namespace vgpu::ctl {
namespace {

using nlohmann::json;
using policy::format_bytes;
using policy::format_duration;

constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

std::string esc(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string label_of(const json& row) {
  if (!row.value("assigned", true)) return "(" + row["vms"][0].get<std::string>() + ")";
  return row.value("student", "");
}

// This period's GPU time of each student as a share of their own budget
// (one scale for all: 100% is each one's budget), so the student who spent a
// small budget stands out next to large ones. Those who spent it come first,
// in red; then the most used share; students without a budget last, on the
// scale of the largest of their uses.
std::string quota_chart(const json& rows) {
  struct Bar {
    std::string name, caption;
    double used = 0, budget = 0;
    bool limited = false;
    double share() const { return limited && budget > 0 ? used / budget : 0; }
    bool spent() const { return limited && used >= budget; }
  };
  std::vector<Bar> bars;
  double unlimited_scale = 1;
  for (const json& row : rows) {
    if (!row.contains("period")) continue;
    Bar b;
    b.name = label_of(row);
    b.used = static_cast<double>(row["period"].value("used_ns", int64_t{0}));
    b.limited = row["quota"].value("limited", false);
    b.budget = static_cast<double>(row["quota"].value("budget_ns", int64_t{0}));
    b.caption = format_duration(static_cast<int64_t>(b.used)) + " of " +
                row["quota"].value("gpu_time", std::string("unlimited"));
    if (b.limited && b.budget > 0) b.caption += " (" + num(100 * b.share()) + "%)";
    if (!b.limited) unlimited_scale = std::max(unlimited_scale, b.used);
    bars.push_back(b);
  }
  std::stable_sort(bars.begin(), bars.end(), [](const Bar& a, const Bar& b) {
    if (a.spent() != b.spent()) return a.spent();
    if (a.limited != b.limited) return a.limited;
    return a.limited ? a.share() > b.share() : a.used > b.used;
  });
  const int row_h = 30, left = 140, width = 520;
  const int height = std::max<int>(40, static_cast<int>(bars.size()) * row_h + 20);
  std::string svg = "<svg class=\"chart\" id=\"quota-chart\" role=\"img\" width=\"" +
                    std::to_string(left + width + 200) + "\" height=\"" + std::to_string(height) +
                    "\" xmlns=\"http://www.w3.org/2000/svg\">\n";
  if (bars.empty()) {
    svg += "<text x=\"10\" y=\"25\">No students in this report.</text>\n";
  }
  int y = 10;
  for (const Bar& b : bars) {
    // Budgets at 100% of the width; a use past its budget stops there.
    const double w = std::min(1.0, b.limited ? b.share() : b.used / unlimited_scale) * width;
    svg += "<text x=\"" + std::to_string(left - 8) + "\" y=\"" + std::to_string(y + 17) +
           "\" text-anchor=\"end\">" + esc(b.name) + "</text>\n";
    svg += "<rect class=\"bar\" x=\"" + std::to_string(left) + "\" y=\"" + std::to_string(y + 4) +
           "\" width=\"" + num(std::max(w, 1.0)) + "\" height=\"18\" fill=\"" +
           (b.spent() ? "#e15759" : b.limited ? "#4e79a7" : "#9c9c9c") + "\"><title>" +
           esc(b.name + ": " + b.caption) + "</title></rect>\n";
    if (b.limited) {
      const int x = left + width;
      svg += "<line class=\"quota\" x1=\"" + std::to_string(x) + "\" x2=\"" + std::to_string(x) +
             "\" y1=\"" + std::to_string(y) + "\" y2=\"" + std::to_string(y + 26) +
             "\" stroke=\"#222\" stroke-width=\"2\" stroke-dasharray=\"4 2\"/>\n";
    }
    svg += "<text x=\"" + num(left + std::max(w, 1.0) + 6) + "\" y=\"" + std::to_string(y + 17) +
           "\" class=\"caption\">" + esc(b.caption) + "</text>\n";
    y += row_h;
  }
  return svg + "</svg>\n";
}

// A time on the report's wall clock (its course's time zone, else UTC).
std::string when_in(const policy::TimeZone& tz, int64_t t) {
  return t ? policy::format_time(tz.local_at(t)) : "-";
}

std::string time_chart(const json& series, const policy::TimeZone& tz) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  double top = 1;
  for (const json& p : series) {
    double sum = 0;
    for (const auto& [name, ns] : p["gpu_ns"].items()) {
      if (seen.insert(name).second) names.push_back(name);
      sum += ns.get<double>();
    }
    top = std::max(top, sum);
  }
  std::map<std::string, std::string> colour;
  for (size_t i = 0; i < names.size(); ++i) colour[names[i]] = kPalette[i % 10];
  const int left = 70, plot_h = 220, plot_w = 640;
  const size_t n = std::max<size_t>(series.size(), 1);
  const double col_w = std::min(60.0, static_cast<double>(plot_w) / static_cast<double>(n));
  std::string svg = "<svg class=\"chart\" id=\"time-chart\" role=\"img\" width=\"" +
                    std::to_string(left + plot_w + 180) + "\" height=\"" +
                    std::to_string(plot_h + 60) + "\" xmlns=\"http://www.w3.org/2000/svg\">\n";
  svg += "<line x1=\"" + std::to_string(left) + "\" y1=\"10\" x2=\"" + std::to_string(left) +
         "\" y2=\"" + std::to_string(plot_h + 10) + "\" stroke=\"#888\"/>\n";
  svg += "<line x1=\"" + std::to_string(left) + "\" y1=\"" + std::to_string(plot_h + 10) +
         "\" x2=\"" + std::to_string(left + plot_w) + "\" y2=\"" + std::to_string(plot_h + 10) +
         "\" stroke=\"#888\"/>\n";
  svg += "<text x=\"" + std::to_string(left - 6) + "\" y=\"16\" text-anchor=\"end\">" +
         esc(format_duration(static_cast<int64_t>(top))) + "</text>\n";
  svg += "<text x=\"" + std::to_string(left - 6) + "\" y=\"" + std::to_string(plot_h + 10) +
         "\" text-anchor=\"end\">0</text>\n";
  if (series.empty()) {
    svg +=
        "<text x=\"" + std::to_string(left + 20) + "\" y=\"120\">No usage in this range.</text>\n";
  }
  double x = left + 4;
  for (const json& p : series) {
    double y = plot_h + 10;
    const int64_t start = p["start"].get<int64_t>();
    for (const std::string& name : names) {
      if (!p["gpu_ns"].contains(name)) continue;
      const double ns = p["gpu_ns"][name].get<double>();
      const double h = ns / top * plot_h;
      y -= h;
      svg += "<rect class=\"bar\" x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" +
             num(col_w * 0.8) + "\" height=\"" + num(std::max(h, 0.5)) + "\" fill=\"" +
             colour[name] + "\"><title>" +
             esc(name + ", " + p.value("label", when_in(tz, start)) + ": " +
                 format_duration(static_cast<int64_t>(ns))) +
             "</title></rect>\n";
    }
    x += col_w;
  }
  if (!series.empty()) {
    const std::string first = when_in(tz, series.front()["start"].get<int64_t>());
    const std::string last = when_in(tz, series.back().value("end", int64_t{0}));
    svg += "<text x=\"" + std::to_string(left) + "\" y=\"" + std::to_string(plot_h + 30) + "\">" +
           esc(first) + "</text>\n";
    svg += "<text x=\"" + std::to_string(left + plot_w) + "\" y=\"" + std::to_string(plot_h + 30) +
           "\" text-anchor=\"end\">" + esc(last) + "</text>\n";
  }
  int ly = 20;
  for (const std::string& name : names) {
    svg += "<rect x=\"" + std::to_string(left + plot_w + 20) + "\" y=\"" + std::to_string(ly - 10) +
           "\" width=\"12\" height=\"12\" fill=\"" + colour[name] + "\"/>";
    svg += "<text x=\"" + std::to_string(left + plot_w + 38) + "\" y=\"" + std::to_string(ly) +
           "\">" + esc(name) + "</text>\n";
    ly += 18;
  }
  return svg + "</svg>\n";
}

std::string table_html(const json& rows) {
  std::string out =
      "<table class=\"sortable\" id=\"usage-table\"><thead><tr><th>Student</th><th>Course</th>"
      "<th>VMs</th><th data-type=\"num\">GPU time</th><th data-type=\"num\">Kernels</th>"
      "<th data-type=\"num\">To device</th><th data-type=\"num\">From device</th>"
      "<th data-type=\"num\">Peak memory</th><th>Quota</th><th data-type=\"num\">Used this "
      "period</th></tr></thead><tbody>\n";
  for (const json& row : rows) {
    auto cell = [](const std::string& text, uint64_t sort) {
      return "<td data-sort=\"" + std::to_string(sort) + "\">" + esc(text) + "</td>";
    };
    const uint64_t period_used =
        row.contains("period") ? static_cast<uint64_t>(row["period"].value("used_ns", int64_t{0}))
                               : 0;
    out +=
        "<tr><td>" + esc(row.value("assigned", true) ? row.value("student", "") : "(unassigned)") +
        (row.value("removed", false) ? " (removed)" : "") + "</td><td>" +
        esc(row.value("course", "")) + "</td><td>" +
        esc(join(row["vms"].get<std::vector<std::string>>(), ", ")) + "</td>" +
        cell(format_duration(row["gpu_ns"].get<int64_t>()), row["gpu_ns"].get<uint64_t>()) +
        cell(std::to_string(row["kernels"].get<uint64_t>()), row["kernels"].get<uint64_t>()) +
        cell(format_bytes(row["bytes_to_device"].get<uint64_t>()),
             row["bytes_to_device"].get<uint64_t>()) +
        cell(format_bytes(row["bytes_from_device"].get<uint64_t>()),
             row["bytes_from_device"].get<uint64_t>()) +
        cell(format_bytes(row["peak_memory"].get<uint64_t>()), row["peak_memory"].get<uint64_t>()) +
        "<td>" + esc(row.contains("quota") ? row["quota"].value("gpu_time", "-") : "-") + "</td>" +
        cell(row.contains("period") ? format_duration(static_cast<int64_t>(period_used)) : "-",
             period_used) +
        "</tr>\n";
  }
  return out + "</tbody></table>\n";
}

constexpr const char* kStyle = R"css(
body { font-family: sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin-top: 2em; }
svg.chart { display: block; margin: 1em 0; font-size: 12px; }
svg.chart text.caption { fill: #444; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border-bottom: 1px solid #ddd; padding: 4px 10px; text-align: left; }
th { cursor: pointer; background: #f4f4f4; }
.note { color: #666; font-size: 12px; }
)css";

// Sorts the table by a clicked column; marks the page rendered for tests.
constexpr const char* kScript = R"js(
(function () {
  var table = document.getElementById('usage-table');
  var heads = table.querySelectorAll('th');
  heads.forEach(function (th, column) {
    th.addEventListener('click', function () {
      var numeric = th.getAttribute('data-type') === 'num';
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      var down = th.getAttribute('data-down') !== '1';
      rows.sort(function (a, b) {
        var x = a.cells[column], y = b.cells[column];
        var r = numeric ? Number(x.getAttribute('data-sort')) - Number(y.getAttribute('data-sort'))
                        : x.textContent.localeCompare(y.textContent);
        return down ? -r : r;
      });
      th.setAttribute('data-down', down ? '1' : '0');
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
  var charts = document.querySelectorAll('svg.chart');
  document.body.setAttribute('data-charts', String(charts.length));
  var bars = document.querySelectorAll('svg.chart rect.bar');
  document.body.setAttribute('data-bars', String(bars.length));
})();
)js";

}  // namespace

std::string html_report(const json& r) {
  const int64_t since = r.value("since", int64_t{0});
  const policy::TimeZone tz = policy::TimeZone::find_or_utc(r.value("time_zone", "UTC"));
  const std::string range = (since ? "from " + when_in(tz, since) : std::string("recorded")) +
                            " until " + when_in(tz, r.value("until", int64_t{0}));
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  html += "<title>vgpu usage report</title>\n<style>" + std::string(kStyle) +
          "</style></head>\n<body>\n";
  html += "<h1>vgpu usage report</h1>\n<p class=\"note\">Usage " + esc(range) +
          " (" + esc(tz.name()) + "); generated " +
          esc(when_in(tz, r.value("generated_at", int64_t{0}))) + ".</p>\n";
  html += "<h2>GPU time this period, against each student's quota</h2>\n";
  html +=
      "<p class=\"note\">Bars: GPU time used in the student's current quota period, as a "
      "share of their own budget (the dashed line: 100%). Red: budget spent; those come first. "
      "Grey: no budget, on the scale of the largest such use.</p>\n";
  html += quota_chart(r["rows"]);
  html += "<h2>GPU time over time</h2>\n";
  html += "<p class=\"note\">Per " +
          std::string(r.value("bucket_s", 3600) == 3600    ? "hour"
                      : r.value("bucket_s", 3600) == 86400 ? "day"
                                                           : "week") +
          ", stacked per student; unassigned VMs in parentheses.</p>\n";
  html += time_chart(r["series"], tz);
  html += "<h2>Usage in the range</h2>\n" + table_html(r["rows"]);
  html += "<script>" + std::string(kScript) + "</script>\n</body></html>\n";
  return html;
}

}  // namespace vgpu::ctl
