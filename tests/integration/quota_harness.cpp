#include "quota_harness.h"

#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include <catch2/catch.hpp>

namespace vgpu::test {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string vgpuctl_path() { return VGPU_TEST_VGPUCTL; }

std::string chromium_path() {
  for (const char* p :
       {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return "";
}

RunResult run_command(const std::vector<std::string>& argv, int uid,
                      std::chrono::milliseconds limit) {
  char tmpl[] = "/tmp/vgpu-cmd-XXXXXX";
  const int fd = mkstemp(tmpl);
  const std::string out = tmpl;
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    if (uid >= 0 &&
        (setgid(static_cast<gid_t>(uid)) != 0 || setuid(static_cast<uid_t>(uid)) != 0)) {
      _exit(126);
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(fd);
  RunResult r;
  int status = 0;
  const auto end = std::chrono::steady_clock::now() + limit;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > end) {
      r.timed_out = true;
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(2ms);
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.exit_code = -WTERMSIG(status);
  r.output = read_file(out);
  fs::remove(out);
  return r;
}

RunResult vgpuctl(const std::string& runtime_dir, const std::vector<std::string>& args, int uid) {
  std::vector<std::string> argv = {vgpuctl_path(), "--runtime-dir", runtime_dir};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv, uid);
}

nlohmann::json daemon_status(const std::string& runtime_dir) {
  const RunResult r = vgpuctl(runtime_dir, {"--json", "status"});
  if (r.exit_code != 0) return nullptr;
  const nlohmann::json j = nlohmann::json::parse(r.output, nullptr, false);
  return j.is_discarded() ? nlohmann::json(nullptr) : j;
}

nlohmann::json tenant_of(const nlohmann::json& status, const std::string& vm) {
  if (status.is_object()) {
    for (const nlohmann::json& t : status["tenants"]) {
      if (t["vm"] == vm) return t;
    }
  }
  return nlohmann::json::object();
}

QuotaDaemon::QuotaDaemon(const std::string& dir, const std::string& db, bool wait_ready,
                         const std::vector<std::string>& extra_env,
                         const std::vector<std::string>& extra_args)
    : dir_(dir), db_(db) {
  // Sockets a killed daemon left behind must not look like a live one.
  fs::remove(dir + "/vgpud.sock");
  fs::remove(dir + "/vgpud-admin.sock");
  static int instance = 0;
  log_ = dir + "/vgpud-" + std::to_string(instance++) + ".log";
  std::vector<std::string> argv = {vgpud_path(), "--runtime-dir", dir,   "--db",
                                   db,           "--libvirt",     "none"};
  // The sim backend with the test kernels, unless the caller names a backend.
  if (std::find(extra_args.begin(), extra_args.end(), "--backend") == extra_args.end()) {
    argv.insert(argv.end(), {"--backend", "sim", "--sim-kernels", test_kernels_path()});
  }
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  proc_ = std::make_unique<Process>(argv, log_, extra_env);
  if (!wait_ready) return;
  const auto end = std::chrono::steady_clock::now() + 30s;
  while (!ready() && proc_->running() && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(5ms);
  }
}

QuotaDaemon::~QuotaDaemon() {
  if (proc_ && proc_->running()) stop();
}

// vgpud logs "serving on" once both sockets listen with their final modes: a
// socket file appears at bind(), before vgpud sets its mode, so a test that
// changes the mode as soon as the file shows would race vgpud's own chmod.
bool QuotaDaemon::ready() {
  return fs::exists(dir_ + "/vgpud.sock") && fs::exists(dir_ + "/vgpud-admin.sock") &&
         log().find("vgpud: serving on") != std::string::npos;
}

void QuotaDaemon::kill9() {
  proc_->signal(SIGKILL);
  proc_->wait(10s);
}

RunResult QuotaDaemon::stop() {
  proc_->signal(SIGTERM);
  return proc_->wait(30s);
}

std::string QuotaDaemon::log() const { return read_file(log_); }

std::unique_ptr<Process> QuotaDaemon::start(const std::string& vm, const std::string& program,
                                            const std::vector<std::string>& args) {
  std::vector<std::string> argv = {vgpu_run_path(),      "--runtime-dir", dir_, "--vm", vm, "--",
                                   program_path(program)};
  argv.insert(argv.end(), args.begin(), args.end());
  return std::make_unique<Process>(
      argv, dir_ + "/out-" + vm + "-" + std::to_string(next_output_++) + ".txt");
}

bool QuotaDaemon::wait_for_state(const std::string& vm, const std::string& state,
                                 Process& program) const {
  for (int i = 0; i < 600 && program.running(); ++i) {
    const RunResult r = ctl({"--json", "top", "--count", "1", "--interval", "0.1"});
    const nlohmann::json top = nlohmann::json::parse(r.output, nullptr, false);
    if (r.exit_code != 0 || !top.is_object() || !top["tenants"].is_array()) continue;
    for (const auto& t : top["tenants"]) {
      if (t.value("vm", "") == vm && t.value("state", "") == state) return true;
    }
  }
  return false;
}

RunResult QuotaDaemon::run(const std::string& vm, const std::string& program,
                           const std::vector<std::string>& args, std::chrono::milliseconds limit) {
  return start(vm, program, args)->wait(limit);
}

std::string database_bytes(const std::string& db) {
  return read_file(db) + "\n--wal--\n" + (fs::exists(db + "-wal") ? read_file(db + "-wal") : "");
}

std::string integrity_check(const std::string& db) {
  sqlite3* h = nullptr;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    sqlite3_close(h);
    return "cannot open";
  }
  sqlite3_stmt* s = nullptr;
  std::string out = "no answer";
  if (sqlite3_prepare_v2(h, "PRAGMA integrity_check", -1, &s, nullptr) == SQLITE_OK &&
      sqlite3_step(s) == SQLITE_ROW) {
    out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
  }
  sqlite3_finalize(s);
  sqlite3_close(h);
  return out;
}

int64_t query_int(const std::string& db, const std::string& sql) {
  sqlite3* h = nullptr;
  sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* s = nullptr;
  int64_t v = -1;
  if (sqlite3_prepare_v2(h, sql.c_str(), -1, &s, nullptr) == SQLITE_OK &&
      sqlite3_step(s) == SQLITE_ROW) {
    v = sqlite3_column_int64(s, 0);
  }
  sqlite3_finalize(s);
  sqlite3_close(h);
  return v;
}

std::string QuotaDaemon::ctl_ok(const std::vector<std::string>& args) const {
  const RunResult r = ctl(args);
  INFO(args.size() << " args: " << r.output);
  REQUIRE(r.exit_code == 0);
  return r.output;
}

nlohmann::json QuotaDaemon::ctl_json(const std::vector<std::string>& args) const {
  const std::string text = ctl_ok(args);
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  INFO(text);
  REQUIRE_FALSE(j.is_discarded());
  return j;
}

}  // namespace vgpu::test
