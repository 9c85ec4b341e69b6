#include "report.h"

#include <time.h>

#include <cstdio>
#include <vector>

#include <nlohmann/json.hpp>

namespace vgpu::smi {

namespace {

constexpr size_t kWidth = 89;  // nvidia-smi's table width

std::string mib(uint64_t bytes) { return std::to_string(bytes >> 20) + "MiB"; }

std::string cuda_version(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

std::string local_time(int64_t unix_seconds) {
  const time_t t = static_cast<time_t>(unix_seconds);
  tm local{};
  localtime_r(&t, &local);
  char buf[64];
  strftime(buf, sizeof buf, "%a %Y-%m-%d %H:%M %Z", &local);
  return buf;
}

std::string on_exhaust_text(uint32_t e) {
  switch (e) {
    case 1: return "its work waits until the budget renews or is raised";
    case 2: return "its work runs on, best-effort, behind everyone in budget";
    default: return "its work is refused (cudaErrorNotPermitted)";
  }
}

// Lines inside the box: "| text...padded |".
class Box {
 public:
  void rule(char c = '-') {
    std::string l(kWidth, c);
    l.front() = l.back() = '+';
    lines_.push_back(std::move(l));
  }
  void line(const std::string& text) {
    std::string t = text.size() > kWidth - 4 ? text.substr(0, kWidth - 4) : text;
    lines_.push_back("| " + t + std::string(kWidth - 4 - t.size(), ' ') + " |");
  }
  // Left text and right text on one line.
  void split(const std::string& left, const std::string& right) {
    const size_t room = kWidth - 4;
    if (left.size() + right.size() + 1 > room) return line(left + " " + right);
    line(left + std::string(room - left.size() - right.size(), ' ') + right);
  }
  std::string str() const {
    std::string out;
    for (const auto& l : lines_) out += l + "\n";
    return out;
  }

 private:
  std::vector<std::string> lines_;
};

std::string padded(const std::string& s, size_t width, bool right = false) {
  if (s.size() >= width) return s;
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

// The VM's processes on the GPU, as nvidia-smi's last table: the device
// memory each holds, as vgpud counts it (N/A from a vgpud that does not say).
void processes(const Snapshot& s, Box* box) {
  box->line("Processes (this VM's, as this user may see them)");
  box->split("   PID       Process name", "GPU Memory Usage  ");
  if (s.processes.empty()) box->line("   No running processes found");
  for (const GpuProcess& p : s.processes) {
    box->split("   " + padded(std::to_string(p.pid), 10) + p.name,
               padded(p.memory_known ? mib(p.memory) : "N/A", 16, true) + "  ");
  }
  box->rule();
}

}  // namespace

std::string format_duration(uint64_t ns) {
  constexpr uint64_t kS = 1'000'000'000;
  if (ns == 0) return "0s";
  if (ns < kS) return std::to_string(ns / 1'000'000) + "ms";
  const uint64_t s = ns / kS;
  if (s < 60) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1fs", static_cast<double>(ns) / kS);
    return buf;
  }
  const uint64_t d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60, sec = s % 60;
  if (d) return std::to_string(d) + "d " + std::to_string(h) + "h";
  if (h) return std::to_string(h) + "h " + std::to_string(m) + "m";
  return std::to_string(m) + "m " + std::to_string(sec) + "s";
}

std::string format_table(const Snapshot& s, int64_t now, const std::string& version) {
  Box box;
  box.rule();
  box.split("vgpu-smi " + version, "CUDA Version: " + cuda_version(s.cuda_version));
  box.rule();
  box.line(padded("GPU  Name / UUID", 46) + "| " + padded("Memory-Usage", 19, true) + " | " +
           "VM GPU-Util");
  box.rule('=');
  char util[32];
  std::snprintf(util, sizeof util, "%.0f%%", s.utilization);
  box.line(padded("  0  " + s.name, 46) + "| " +
           padded(mib(s.memory_used) + " / " + mib(s.memory_total), 19, true) + " | " +
           padded(util, 11, true));
  box.line(padded("     " + s.uuid, 46) + "| " + std::string(19, ' ') + " | " +
           std::string(11, ' '));
  box.rule();

  const Budget& b = s.budget;
  if (!b.known) {
    box.line("GPU-time budget: not reported (vgpud is older than this vgpu-smi)");
    box.rule();
    processes(s, &box);
    return box.str();
  }
  std::string who = b.bound ? "student " + b.student : "no student";
  if (!b.course.empty()) who += " (course " + b.course + ")";
  box.line("GPU-time budget of " + who + ", VM " + b.vm);
  if (!b.limited) {
    box.line("  quota        unlimited");
    box.line("  used         " + format_duration(b.spent_ns) + " this week");
  } else {
    box.line("  quota        " + b.quota);
    box.line("  used         " + padded(format_duration(b.spent_ns), 14) + "left " +
             format_duration(b.left_ns) + (b.left_ns == 0 ? "  (spent)" : ""));
    if (!b.open) {
      box.line("  window       " + local_time(b.window_start) + " to " + local_time(b.window_end) +
               (now < b.window_start ? " (not begun)" : " (over)"));
    } else if (b.window_end > now) {
      box.line(std::string(b.renews ? "  renews       " : "  ends         ") + local_time(b.window_end) +
               " (in " + format_duration(static_cast<uint64_t>(b.window_end - now) * 1'000'000'000) +
               ")");
    }
    box.line("  when spent   " + (b.best_effort ? std::string("running best-effort now")
                                            : on_exhaust_text(b.on_exhaust)));
  }
  if (b.memory_cap) box.line("  memory cap   " + mib(b.memory_cap));
  box.rule();
  processes(s, &box);
  return box.str();
}

std::string format_json(const Snapshot& s) {
  nlohmann::json j = {{"gpu",
                       {{"index", 0},
                        {"name", s.name},
                        {"uuid", s.uuid},
                        {"cuda_version", cuda_version(s.cuda_version)},
                        {"memory_total", s.memory_total},
                        {"memory_used", s.memory_used},
                        {"utilization_percent", s.utilization}}}};
  const Budget& b = s.budget;
  if (b.known) {
    static const char* const kExhaust[] = {"reject", "wait", "best-effort"};
    j["budget"] = {{"vm", b.vm},
                   {"student", b.student},
                   {"course", b.course},
                   {"limited", b.limited},
                   {"quota", b.quota},
                   {"spent_ns", b.spent_ns},
                   {"left_ns", b.limited ? nlohmann::json(b.left_ns) : nlohmann::json(nullptr)},
                   {"window_start", b.window_start},
                   {"window_end", b.window_end},
                   {"renews", b.renews},
                   {"open", b.open},
                   {"best_effort", b.best_effort},
                   {"on_exhaust", kExhaust[b.on_exhaust < 3 ? b.on_exhaust : 0]},
                   {"memory_cap", b.memory_cap}};
  }
  j["processes"] = nlohmann::json::array();
  for (const GpuProcess& p : s.processes) {
    nlohmann::json e = {{"pid", p.pid}, {"name", p.name}};
    e["memory_bytes"] = p.memory_known ? nlohmann::json(p.memory) : nlohmann::json(nullptr);
    j["processes"].push_back(std::move(e));
  }
  return j.dump(2) + "\n";
}

}  // namespace vgpu::smi
