// The daemon's side of one vgpu-cuda-worker: start it, call it, kill it.
// Knows nothing of tenants or tables (that is CudaBackend's); it moves requests
// and bytes and enforces deadlines.
//
// Every wait has a deadline. A worker that misses one is killed on the spot
// (SIGKILL, reaped in the background by the Reaper) and the call reports
// kTimedOut; one that died or broke the protocol reports kGone. Killing closes
// the daemon's ends of its sockets too, so a call waiting on the other socket
// returns at once.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "driver_api.h"
#include "reaper.h"
#include "staging_area.h"
#include "vgpu/protocol/status.h"
#include "worker_protocol.h"

namespace vgpu::executor::cuda {

struct WorkerSpec {
  std::string path;                // the vgpu-cuda-worker executable
  std::string driver = "libcuda.so.1";
  int device = 0;                  // ordinal, as the driver numbers devices
  unsigned ctx_flags = 0;          // CU_CTX_SCHED_*
  uint64_t slot_bytes = 4ull << 20;
  bool pin = true;                 // page-lock the staging slots
};

// Why a worker could not be used: the probe's answer.
struct StartFailure {
  Status status = Status::kInitializationError;
  std::string why;
};

class WorkerProcess {
 public:
  enum class Link { kOk, kTimedOut, kGone };
  struct Answer {
    Link link = Link::kGone;
    wire::Reply reply;
    std::vector<uint8_t> tail;
  };

  // Starts a worker with a context of its own and waits (until `limit`) for it
  // to report.
  static Status start(const WorkerSpec& spec, Reaper* reaper, std::chrono::milliseconds limit,
                      std::unique_ptr<WorkerProcess>* out, StartFailure* failure);
  // Runs a probe worker: the driver, the device, what it reports.
  static Status probe(const WorkerSpec& spec, std::chrono::milliseconds limit,
                      wire::DeviceReport* out, StartFailure* failure);

  ~WorkerProcess();  // kills it
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool pinned() const { return pinned_; }
  bool alive() const { return !killed_.load(); }

  // A control call (any thread; calls are serialized). `pass_fd` >= 0 rides
  // along with the request.
  Answer control(const wire::Request& request, std::span<const uint8_t> tail, int pass_fd,
                 uint64_t deadline_ns);
  // Work (one thread at a time: the dispatcher's).
  Answer work(const wire::Request& request, std::span<const uint8_t> tail, uint64_t deadline_ns);
  // The same in two halves, so that the dispatcher can wait for another
  // worker in between: send (false: the worker is gone), then receive.
  bool send_work(const wire::Request& request, std::span<const uint8_t> tail);
  Answer receive_work(uint64_t deadline_ns);
  // Copies through the staging area, pipelined with the worker; `rows`:
  // the device side's rows (wire::RowShape; the host side is packed).
  Answer copy_in(uint64_t dst, const uint8_t* src, uint64_t size, const wire::RowShape& rows,
                 uint64_t deadline_ns);
  Answer copy_out(uint64_t src, uint8_t* dst, uint64_t size, const wire::RowShape& rows,
                  uint64_t deadline_ns);

  // Moves what the worker wrote to its stdout (stream 1: the kernels'
  // printf) or stderr (2) since the last take onto *into, at most `limit`
  // bytes; returns how many bytes past the limit were dropped. Call while
  // the worker is between work items (its output is flushed then).
  size_t take_output(int stream, std::string* into, size_t limit);

  // SIGKILL now (idempotent); `why` goes to the log with the reaping.
  void kill(const std::string& why);

 private:
  WorkerProcess(pid_t pid, int control_fd, int work_fd, uint8_t* region, uint64_t region_bytes,
                uint64_t slot_bytes, Reaper* reaper);
  Answer exchange(int fd, const wire::Request& request, std::span<const uint8_t> tail,
                  int pass_fd, uint64_t deadline_ns);
  bool post(int fd, const wire::Request& request, std::span<const uint8_t> tail, int pass_fd);
  // Waits for the reply on `fd` (its request already sent), into `buf`.
  Answer receive(int fd, std::vector<uint8_t>& buf, uint64_t deadline_ns);
  // The answer to a staged copy whose bytes moved as far as `moved` says; a
  // worker that missed its deadline, or answered success too soon
  // (staging_transfer.h), is killed.
  Answer staged_answer(StagingArea::Wait moved, uint64_t deadline_ns);
  std::vector<uint8_t>& buffer_for(int fd) { return fd == control_fd_ ? control_buf_ : work_buf_; }
  // True once the worker's answer is waiting on the work socket, or it is gone.
  bool work_socket_ready() const;

  const pid_t pid_;
  const int control_fd_;
  const int work_fd_;
  int output_fd_[2] = {-1, -1};  // the worker's stdout and stderr (memfds)
  uint8_t* const region_;
  const uint64_t region_bytes_;
  StagingArea staging_;
  Reaper* const reaper_;
  bool pinned_ = false;
  std::atomic<bool> killed_{false};
  std::mutex control_mu_;  // one control call at a time
  std::vector<uint8_t> control_buf_;  // guarded by control_mu_: replies are read into it
  std::mutex work_mu_;     // one work item at a time
  std::vector<uint8_t> work_buf_;     // guarded by work_mu_
};

}  // namespace vgpu::executor::cuda
