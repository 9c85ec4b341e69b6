// vgpud's configuration file: TOML (/etc/vgpu/vgpud.toml by default, or
// --config FILE). Every command-line flag is a top-level key by its long name
// (`slice-ms = 2`, `sim-kernels = ["a.so", "b.so"]`); a flag given on the
// command line wins over the file. Two tables pin scheduling by VM name:
//
//   [weights]
//   alice = 4
//   [courses.gpu101]
//   weight = 3
//   vms = ["alice", "bob"]
//
// SIGHUP (systemctl reload) re-reads the file: the scheduling keys (policy,
// slice-ms, overlap-depth, weights, courses) apply at once; any other change
// is logged by name as taking effect at the next restart. A key that is no
// flag is an error, at start and on reload. A file whose first character is
// `{` is the older JSON scheduling file (scheduler_config.h), still read.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vgpu/result.h"

namespace CLI {
class App;
class Config;
}  // namespace CLI

namespace vgpu::daemon {

// The keys SIGHUP applies (scheduler_config.h), as the file spells them.
inline constexpr const char* kLiveKeys[] = {"policy", "slice-ms", "overlap-depth", "weights",
                                            "courses"};

struct ConfigFile {
  // The scheduling part, in the JSON scheduling file's shape (policy,
  // slice_ms, overlap_depth, weights, courses) for parse_scheduler_config.
  nlohmann::json scheduling = nlohmann::json::object();
  // Every other key: the flag's long name and its values as text.
  std::map<std::string, std::vector<std::string>> flags;
};

bool looks_like_json(const std::string& text);
// Parses TOML text: invalid argument, the message naming the line of a
// syntax error or the key of a value of the wrong shape.
Result parse_config_file(const std::string& text, ConfigFile* out);
// Reads and parses `path` (unavailable: it cannot be read).
Result read_config_file(const std::string& path, ConfigFile* out);

// CLI11's reader of the file: hands it the flags (not the scheduling keys,
// which scheduler_config.h reads, and re-reads on SIGHUP). A key that is not
// in `known` (flag_names) fails the parse, named.
std::shared_ptr<CLI::Config> toml_flag_reader(std::set<std::string> known);

// The flags whose value differs between two reads of the file (added,
// removed or changed), and the keys of `after` that are no flag of `known`.
struct ConfigDiff {
  std::vector<std::string> changed;
  std::vector<std::string> unknown;
};
ConfigDiff diff_flags(const ConfigFile& before, const ConfigFile& after,
                      const std::set<std::string>& known);

// The long names (no dashes) of `app`'s options: what a file may set.
std::set<std::string> flag_names(const CLI::App& app);

// The default file of a vgpud at `exe`, beside its install prefix as
// GNUInstallDirs places it: /usr/bin/vgpud reads /etc/vgpu/vgpud.toml (the
// package), PREFIX/bin/vgpud reads PREFIX/etc/vgpu/vgpud.toml (`cmake
// --install`, /usr/local by default), and a build tree's does the same
// (build/etc/vgpu: none, so a host's own file does not configure it).
std::string default_config_path(const std::string& exe);

}  // namespace vgpu::daemon
