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
  unsigned interpreter_threads = 1;  // host threads for an interpreted grid
};

struct WorkerSymbol {
  uint64_t module = 0;
  uint64_t address = 0;
  uint64_t size = 0;
  std::string name;
};

// A batch of launches as the worker reads it (worker_protocol.h): a
// LaunchBatch header followed by its records. Built in place, reused.
class LaunchPacket {
 public:
  void clear(const wire::LaunchBatch& head);
  // Appends a record; false (nothing appended) if the packet would pass
  // wire::kMaxMessageBytes or hold more than wire::kMaxBatch launches.
  bool add(const wire::Launch& head, std::string_view kernel, std::span<const uint8_t> params);
  uint32_t count() const { return count_; }
  std::span<const uint8_t> bytes() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
  uint32_t count_ = 0;
};

struct WorkerReply {
  enum class Kind { kDone, kTimeout, kDied };
  Kind kind = Kind::kDied;
  // The results the worker reported, in order: kDone, every launch that ran
  // (at least one); kDied after a fault, those before the launch that
  // faulted (faulted is true then, and done.size() is that launch's index).
  std::vector<wire::LaunchDone> done;
  bool faulted = false;
  std::string detail;  // kDied: how ("killed by SIGSEGV", "SIGSEGV at 0x...")
  std::string printed;  // what the launches that ran printed (device_printf), in order
  std::string errors;   // and their failed asserts' messages (device_assert)
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

  // Replaces the worker's texture and surface objects. False if it is gone.
  bool send_textures(const std::vector<wire::Texture>& textures);

  // Sends a module's PTX text (worker_protocol.h, PtxChunk). False if the
  // worker is gone.
  bool send_ptx(uint64_t module, const std::string& text);

  // Runs a batch; kTimeout if no answer by `deadline_ns` (engine clock; the
  // worker is killed then), kDied if it exited, faulted or broke the protocol
  // (it is reaped then). `reply` is reused.
  void run(const LaunchPacket& packet, uint64_t deadline_ns, WorkerReply* reply);

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
  std::vector<uint8_t> receive_buffer_;  // one packet; kept between batches
};

}  // namespace vgpu::executor::sim
