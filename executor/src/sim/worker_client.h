// The backend's side of one worker process: start it (posix_spawn, only the
// socket and the context's memfd inherited), hand it the context's variables,
// run a launch under the watchdog, kill it. Knows nothing of contexts.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/protocol/status.h"
#include "worker_protocol.h"

namespace vgpu::executor::sim {

struct WorkerSpec {
  std::string path;                  // the vgpu-sim-worker executable
  std::vector<std::string> plugins;  // dlopened by the worker, in order
};

struct WorkerSymbol {
  uint64_t module = 0;
  uint64_t address = 0;
  uint64_t size = 0;
  std::string name;
};

struct WorkerLaunch {
  std::string_view kernel;  // mangled name
  uint64_t module = 0;
  uint32_t grid[3] = {};
  uint32_t block[3] = {};
  uint32_t shared_mem = 0;
  uint64_t modeled_ns = 0;
  std::span<const uint8_t> params;
};

struct WorkerReply {
  enum class Kind { kDone, kTimeout, kDied };
  Kind kind = Kind::kDied;
  wire::LaunchDone done;  // kDone only
  std::string detail;     // kDied: how ("killed by SIGSEGV", ...)
};

class Worker {
 public:
  // memfd >= 0: a worker for the slot [base, base + span); memfd < 0: a check
  // run that only loads the plug-ins. Waits (up to `limit`) for it to report;
  // on failure *error says why and no process is left behind.
  static Status start(const WorkerSpec& spec, int memfd, uint64_t base, uint64_t span,
                      std::chrono::milliseconds limit, std::unique_ptr<Worker>* out,
                      std::string* error);
  ~Worker();  // kills and reaps the process
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  pid_t pid() const { return pid_; }

  // Replaces the worker's symbol table. False if the worker is gone.
  bool send_symbols(const std::vector<WorkerSymbol>& symbols);

  // Runs one launch; kTimeout after `watchdog` (the worker is killed then),
  // kDied if it exited or broke the protocol (it is reaped then).
  WorkerReply launch(const WorkerLaunch& launch, std::chrono::milliseconds watchdog);

 private:
  Worker(pid_t pid, int fd) : pid_(pid), fd_(fd) {}
  bool send_all(const void* data, size_t size);
  // Waits for one packet until the deadline: >0 bytes, 0 at EOF, -1 on
  // timeout, -2 on error.
  ssize_t receive(void* buf, size_t size, uint64_t deadline_ns);
  std::string kill_and_reap();

  const pid_t pid_;
  const int fd_;
  bool reaped_ = false;
};

}  // namespace vgpu::executor::sim
