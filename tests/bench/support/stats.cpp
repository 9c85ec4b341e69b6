#include "stats.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <string>

namespace vgpu::bench {

Summary summarize(std::vector<double> samples) {
  Summary s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.count = samples.size();
  s.min = samples.front();
  s.median = samples[samples.size() / 2];
  s.p99 = samples[std::min(samples.size() - 1, samples.size() * 99 / 100)];
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(s.count);
  return s;
}

bool report(const std::string& what, const std::string& value, const std::string& target,
            bool met) {
  if (target.empty()) {
    std::printf("  %-58s %9s\n", what.c_str(), value.c_str());
  } else {
    std::printf("  %-58s %9s  target %-7s %s\n", what.c_str(), value.c_str(), target.c_str(),
                met ? "met" : "NOT met");
  }
  return met;
}

bool report_ratio(const std::string& what, double ratio, const std::string& target, bool met) {
  char value[32];
  std::snprintf(value, sizeof value, "%.2fx", ratio);
  return report(what, value, target, met);
}

std::string machine_line() {
  std::string model = "unknown CPU";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  }
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) != 3) load[0] = load[1] = load[2] = -1;
  utsname u{};
  uname(&u);
  char buf[512];
  std::snprintf(buf, sizeof buf, "machine: %s, %ld cores, Linux %s; load average %.2f %.2f %.2f",
                model.c_str(), sysconf(_SC_NPROCESSORS_ONLN), u.release, load[0], load[1],
                load[2]);
  return buf;
}

}  // namespace vgpu::bench
