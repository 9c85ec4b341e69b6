// vgpud's scheduling settings: which policy, how long a slice, the overlap
// depth, and the weights and courses the operator pins on VMs by name.
//
// Sources, later ones winning: built-in defaults; the config file
// (--config, default /etc/vgpu/vgpud.toml); the command line (--policy, --slice-ms, --overlap-depth),
// which keeps winning when the file is re-read on SIGHUP.
//
// The file is vgpud.toml (config_file.h: these are its keys policy, slice-ms,
// overlap-depth and its [weights] and [courses.NAME] tables), or, as before,
// JSON; every key is optional, an unknown key is an error (a misspelt setting
// must not be silently ignored):
//   {
//     "policy": "fair",                    fair | fixed-share | best-effort
//     "slice_ms": 2,                       0.5 .. 50
//     "overlap_depth": 4,                  1 .. 16
//     "weights": {"alice": 4, "bob": 1},   VM name -> weight (1 .. 1000000)
//     "courses": {"gpu101": {"weight": 3, "vms": ["alice", "bob"]}}
//   }
// A VM's weight or course here overrides what the quota database says for it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "vgpu/result.h"
#include "vgpu/scheduler/dispatcher.h"
#include "vgpu/scheduler/policy.h"

namespace CLI {
class App;
}

namespace vgpu::daemon {

struct CourseSetting {
  uint32_t weight = 1;
  std::vector<std::string> vms;
  bool operator==(const CourseSetting&) const = default;
};

struct SchedulerSettings {
  std::string policy = "fair";
  double slice_ms = 2.0;
  // Launches of one VM on the GPU at once: enough to hide the round trip to a
  // worker behind kernels of tens of microseconds (gpu_model_bench), few
  // enough that a turn overruns its slice by at most three kernels more.
  uint32_t overlap_depth = 4;
  std::map<std::string, uint32_t> weights;       // by VM name
  std::map<std::string, CourseSetting> courses;  // by course name
  bool operator==(const SchedulerSettings&) const = default;
};

// What the command line said; unset options leave the file's value. The
// file's own flags do not land here (config_file.h leaves them to the file).
struct SchedulerFlags {
  std::optional<std::string> policy;
  std::optional<double> slice_ms;
  std::optional<uint32_t> overlap_depth;
  std::string config_file;  // empty: none (set by main from --config)
};

void add_scheduler_flags(CLI::App& app, SchedulerFlags* flags);

// Parses a config file's text over `*out` (which holds the defaults).
// Invalid argument, the message naming the key or value, for what vgpud
// cannot take; `*out` is unchanged then.
Result parse_scheduler_config(const std::string& text, SchedulerSettings* out);
// Defaults, then the file (if any), then the flags; checked as a whole. A
// file that cannot be read: unavailable.
Result resolve_scheduler_settings(const SchedulerFlags& flags, SchedulerSettings* out);
Result check_scheduler_settings(const SchedulerSettings& s);

scheduler::PolicyOptions policy_options(const SchedulerSettings& s);
// The weight and course the settings pin on `vm` (empty if none).
scheduler::ParamsOverride pin_for_vm(const SchedulerSettings& s, const std::string& vm);
// The scheduler group id of a course named in the file: a hash of its name
// in a range of its own (bit 30 set, bit 31 clear), apart from the quota
// database's course ids and its best-effort group.
uint32_t course_group_id(const std::string& course);
std::string describe(const SchedulerSettings& s);

}  // namespace vgpu::daemon
