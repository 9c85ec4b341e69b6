// Helpers for the quota, vgpuctl and crash tests: vgpuctl as a subprocess (as
// root or as another uid; its `status` read as JSON), a daemon on a given runtime directory and
// database (so it can be killed and restarted on the same files), and the
// database's bytes.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness.h"

namespace vgpu::test {

std::string vgpuctl_path();
std::string chromium_path();  // "" if no Chromium is installed

// Runs vgpuctl with `args` (after --runtime-dir DIR), as `uid` if >= 0.
RunResult vgpuctl(const std::string& runtime_dir, const std::vector<std::string>& args,
                  int uid = -1);
// `vgpuctl --json status` against the daemon at `runtime_dir` (null on failure).
nlohmann::json daemon_status(const std::string& runtime_dir);
// The status entry of VM `vm`, or an empty object if it holds and did nothing.
nlohmann::json tenant_of(const nlohmann::json& status, const std::string& vm);
// Runs any command to completion, as `uid` if >= 0; output is stdout and stderr.
RunResult run_command(const std::vector<std::string>& argv, int uid = -1,
                      std::chrono::milliseconds limit = std::chrono::seconds(60));

// vgpud on a runtime directory and database of the caller's choosing.
class QuotaDaemon {
 public:
  QuotaDaemon(const std::string& dir, const std::string& db, bool wait_ready = true,
              const std::vector<std::string>& extra_env = {},
              const std::vector<std::string>& extra_args = {});
  ~QuotaDaemon();
  bool ready();  // both sockets listen, their modes set (vgpud logged "serving on")
  void kill9();
  RunResult stop();
  std::string log() const;
  // Starts / runs a program as VM `vm`.
  std::unique_ptr<Process> start(const std::string& vm, const std::string& program,
                                 const std::vector<std::string>& args = {});
  RunResult run(const std::string& vm, const std::string& program,
                const std::vector<std::string>& args = {},
                std::chrono::milliseconds limit = std::chrono::seconds(120));
  RunResult ctl(const std::vector<std::string>& args, int uid = -1) const {
    return vgpuctl(dir_, args, uid);
  }
  // Polls `vgpuctl --json top` until VM `vm` is in `state` ("busy",
  // "waiting (quota)"), while `program` runs: an event to wait on, where a
  // sleep would be outlasted on a loaded machine. False if it never was.
  bool wait_for_state(const std::string& vm, const std::string& state, Process& program) const;
  // vgpuctl's output, which must succeed; and that output parsed as JSON.
  std::string ctl_ok(const std::vector<std::string>& args) const;
  nlohmann::json ctl_json(const std::vector<std::string>& args) const;
  const std::string& dir() const { return dir_; }
  pid_t pid() const { return proc_ ? proc_->pid() : -1; }

 private:
  std::string dir_, db_, log_;
  std::unique_ptr<Process> proc_;
  int next_output_ = 0;
};

// The bytes of the database and its WAL (what a change would alter).
std::string database_bytes(const std::string& db);
// PRAGMA integrity_check of a database no one has open, and a query's first value.
std::string integrity_check(const std::string& db);
int64_t query_int(const std::string& db, const std::string& sql);

}  // namespace vgpu::test
