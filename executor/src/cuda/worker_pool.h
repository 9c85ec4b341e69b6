// Workers started ahead of need. Starting one costs a process, cuInit and a
// context (a few hundred milliseconds on a real GPU), and contexts are created
// on the transport thread, where every VM waits: a context takes a started
// worker from here, and one thread starts the next in the background.
//
// All workers are started by that one thread, which lives as long as the pool:
// a worker dies with the thread that started it (PR_SET_PDEATHSIG), and this
// one ends only when the backend does.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "worker_process.h"

namespace vgpu::executor::cuda {

class WorkerPool {
 public:
  // Keeps `spares` started workers ready (0: start each on demand, still on
  // the pool's thread).
  WorkerPool(WorkerSpec spec, Reaper* reaper, size_t spares, std::chrono::milliseconds start_limit);
  ~WorkerPool();  // kills the spares, ends the thread
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // A started worker: a spare, or one started now (waits up to the start limit).
  Status take(std::unique_ptr<WorkerProcess>* out, StartFailure* failure);

  size_t ready() const;

 private:
  void run();

  const WorkerSpec spec_;
  Reaper* const reaper_;
  const size_t spares_;
  const std::chrono::milliseconds start_limit_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  // --- guarded by mu_ ---
  std::deque<std::unique_ptr<WorkerProcess>> ready_;
  size_t waiting_ = 0;             // take() calls waiting for a worker
  uint64_t attempts_ = 0;          // start attempts begun, ever (numbered from 1)
  uint64_t last_failed_ = 0;       // the number of the last attempt that failed
  StartFailure last_failure_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace vgpu::executor::cuda
