#include "scheduler_config.h"

#include <CLI/CLI.hpp>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "config_file.h"
#include "vgpu/scheduler/policy_factory.h"

namespace vgpu::daemon {

using nlohmann::json;

void add_scheduler_flags(CLI::App& app, SchedulerFlags* flags) {
  app.add_option("--policy", flags->policy,
                 "scheduling policy: fair (default), fixed-share or best-effort")
      ->check(CLI::IsMember({"fair", "fixed-share", "best-effort"}));
  app.add_option("--slice-ms", flags->slice_ms, "scheduling time slice in milliseconds (default 2)")
      ->check(CLI::Range(0.5, 50.0));
  app.add_option("--overlap-depth", flags->overlap_depth,
                 "kernel launches of one VM in flight on the GPU at once (default 4; the sim "
                 "backend runs one at a time)")
      ->check(CLI::Range(1u, scheduler::kMaxOverlapDepth));
}

namespace {

// A whole number in [lo, hi], or false with `why`.
bool read_count(const json& v, const std::string& what, uint64_t lo, uint64_t hi, uint32_t* out,
                std::string* why) {
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) {
    *why = what + " must be a whole number, not " + v.dump();
    return false;
  }
  const uint64_t n = v.get<uint64_t>();
  if (n < lo || n > hi) {
    *why = what + " must be between " + std::to_string(lo) + " and " + std::to_string(hi) +
           ", not " + std::to_string(n);
    return false;
  }
  *out = static_cast<uint32_t>(n);
  return true;
}

bool read_weights(const json& v, SchedulerSettings* out, std::string* why) {
  if (!v.is_object()) {
    *why = "\"weights\" must be an object of VM name to weight";
    return false;
  }
  out->weights.clear();
  for (const auto& [vm, w] : v.items()) {
    if (!read_count(w, "the weight of VM '" + vm + "'", 1, scheduler::kMaxWeight,
                    &out->weights[vm], why))
      return false;
  }
  return true;
}

bool read_courses(const json& v, SchedulerSettings* out, std::string* why) {
  if (!v.is_object()) {
    *why = "\"courses\" must be an object of course name to {\"weight\", \"vms\"}";
    return false;
  }
  out->courses.clear();
  for (const auto& [name, c] : v.items()) {
    const std::string what = "course '" + name + "'";
    if (!c.is_object()) {
      *why = what + " must be an object with \"weight\" and \"vms\"";
      return false;
    }
    CourseSetting course;
    for (const auto& [key, value] : c.items()) {
      if (key == "weight") {
        if (!read_count(value, "the weight of " + what, 1, scheduler::kMaxWeight, &course.weight,
                        why))
          return false;
      } else if (key == "vms") {
        if (!value.is_array()) {
          *why = "\"vms\" of " + what + " must be a list of VM names";
          return false;
        }
        for (const json& vm : value) {
          if (!vm.is_string()) {
            *why = "\"vms\" of " + what + " must hold VM names, not " + vm.dump();
            return false;
          }
          course.vms.push_back(vm.get<std::string>());
        }
      } else {
        *why = what + ": unknown key \"" + key + "\" (expected weight, vms)";
        return false;
      }
    }
    out->courses[name] = std::move(course);
  }
  return true;
}

}  // namespace

Result parse_scheduler_config(const std::string& text, SchedulerSettings* out) {
  json doc;
  if (!looks_like_json(text)) {
    // vgpud.toml (config_file.h): its scheduling keys, spelt as here; what
    // is said about them uses the file's spelling.
    ConfigFile file;
    if (Result r = parse_config_file(text, &file); !r.ok()) return r;
    SchedulerSettings s = *out;
    const Result r = parse_scheduler_config(file.scheduling.dump(), &s);
    if (r.ok()) {
      *out = std::move(s);
      return r;
    }
    std::string why = r.message();
    for (auto [from, to] : {std::pair{"slice_ms", "slice-ms"}, {"overlap_depth", "overlap-depth"}}) {
      for (size_t at; (at = why.find(from)) != std::string::npos;)
        why.replace(at, strlen(from), to);
    }
    return Result::invalid_argument(why);
  } else {
    try {
      doc = json::parse(text);
    } catch (const json::exception& e) {  // parse_error, and out_of_range for numbers too big
      return Result::invalid_argument(std::string("not valid JSON: ") + e.what());
    }
  }
  if (!doc.is_object()) return Result::invalid_argument("the top level must be a JSON object");
  SchedulerSettings s = *out;
  std::string why_not;
  std::string* why = &why_not;
  for (const auto& [key, v] : doc.items()) {
    bool good = true;
    if (key == "policy") {
      good = v.is_string();
      if (good) s.policy = v.get<std::string>();
      if (!good) *why = "\"policy\" must be a string";
    } else if (key == "slice_ms") {
      good = v.is_number();
      if (good) s.slice_ms = v.get<double>();
      if (!good) *why = "\"slice_ms\" must be a number";
    } else if (key == "overlap_depth") {
      good = read_count(v, "\"overlap_depth\"", 1, scheduler::kMaxOverlapDepth, &s.overlap_depth, why);
    } else if (key == "weights") {
      good = read_weights(v, &s, why);
    } else if (key == "courses") {
      good = read_courses(v, &s, why);
    } else {
      *why = "unknown key \"" + key + "\" (expected policy, slice_ms, overlap_depth, weights, courses)";
      good = false;
    }
    if (!good) return Result::invalid_argument(why_not);
  }
  if (Result r = check_scheduler_settings(s); !r.ok()) return r;
  *out = std::move(s);
  return {};
}

Result check_scheduler_settings(const SchedulerSettings& s) {
  // In milliseconds first: a slice of 1e300 ms does not fit in nanoseconds.
  const double min_ms = static_cast<double>(scheduler::kMinSlice) / 1e6;
  const double max_ms = static_cast<double>(scheduler::kMaxSlice) / 1e6;
  if (!(s.slice_ms >= min_ms && s.slice_ms <= max_ms)) {
    std::ostringstream ms;
    ms << s.slice_ms;
    return Result::invalid_argument("slice must be between 0.5 and 50 ms, not " + ms.str() + " ms");
  }
  if (Result r = scheduler::check_policy(s.policy, policy_options(s)); !r.ok()) return r;
  if (s.overlap_depth < 1 || s.overlap_depth > scheduler::kMaxOverlapDepth) {
    return Result::invalid_argument("overlap_depth must be between 1 and " +
                                    std::to_string(scheduler::kMaxOverlapDepth));
  }
  std::map<std::string, std::string> course_of;  // vm -> course
  std::map<uint32_t, std::string> ids;
  for (const auto& [name, c] : s.courses) {
    const uint32_t id = course_group_id(name);
    if (auto [it, fresh] = ids.emplace(id, name); !fresh) {
      return Result::invalid_argument("courses '" + it->second + "' and '" + name +
                                      "' hash alike; rename one");
    }
    for (const std::string& vm : c.vms) {
      if (auto [it, fresh] = course_of.emplace(vm, name); !fresh) {
        return Result::invalid_argument("VM '" + vm + "' is in two courses ('" + it->second +
                                        "' and '" + name + "')");
      }
    }
  }
  return {};
}

Result resolve_scheduler_settings(const SchedulerFlags& flags, SchedulerSettings* out) {
  SchedulerSettings s;
  if (!flags.config_file.empty()) {
    std::ifstream in(flags.config_file);
    if (!in) return Result::unavailable("cannot read the config file " + flags.config_file);
    std::stringstream text;
    text << in.rdbuf();
    if (Result r = parse_scheduler_config(text.str(), &s); !r.ok())
      return r.prefixed(flags.config_file + ": ");
  }
  if (flags.policy) s.policy = *flags.policy;
  if (flags.slice_ms) s.slice_ms = *flags.slice_ms;
  if (flags.overlap_depth) s.overlap_depth = *flags.overlap_depth;
  if (Result r = check_scheduler_settings(s); !r.ok()) return r;
  *out = std::move(s);
  return {};
}

scheduler::PolicyOptions policy_options(const SchedulerSettings& s) {
  scheduler::PolicyOptions o;
  o.slice = static_cast<scheduler::Nanos>(s.slice_ms * 1e6);
  return o;
}

scheduler::ParamsOverride pin_for_vm(const SchedulerSettings& s, const std::string& vm) {
  scheduler::ParamsOverride pin;
  if (auto w = s.weights.find(vm); w != s.weights.end()) pin.weight = w->second;
  for (const auto& [name, c] : s.courses) {
    if (std::find(c.vms.begin(), c.vms.end(), vm) == c.vms.end()) continue;
    pin.group = course_group_id(name);
    pin.group_weight = c.weight;
  }
  return pin;
}

uint32_t course_group_id(const std::string& course) {
  uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char c : course) h = (h ^ c) * 16777619u;
  return 0x40000000u | (h & 0x3FFFFFFFu);
}

std::string describe(const SchedulerSettings& s) {
  std::ostringstream out;
  out << "policy " << s.policy << ", slice " << s.slice_ms << " ms, overlap depth "
      << s.overlap_depth;
  if (!s.weights.empty()) out << ", " << s.weights.size() << " VM weight(s)";
  if (!s.courses.empty()) out << ", " << s.courses.size() << " course(s)";
  return out.str();
}

}  // namespace vgpu::daemon
