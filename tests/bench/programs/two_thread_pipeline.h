// A baseline for pageable copies: the same two copies of every byte that a
// staged copy makes (program buffer -> staging buffer -> destination), done
// by two threads of this process taking turns on a ring of four staging
// pieces, with nothing else in between: no vgpud, no messages. The helper
// polls for 50 µs after its last piece, then sleeps, as vgpud's threads do.
// What two copies pipelined across two threads can reach on this machine; a
// staged copy through vgpud cannot beat it.
#pragma once

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace bp {

class TwoThreadPipeline {
 public:
  // Pieces as vgpu's guest library cuts a pageable copy (Staging::chunk_for
  // in intercept/src/staging.h): an eighth of the copy, at least 256 KiB, at
  // most a quarter of the staging ring, which is the whole data area of the
  // VM copy_bench starts (vgpud's default, 64 MiB).
  static uint64_t piece_for(uint64_t size) {
    return std::min(std::max<uint64_t>(size / 8, uint64_t{256} << 10), uint64_t{16} << 20);
  }

  explicit TwoThreadPipeline(uint64_t max_size)
      : ring_(kSlots * piece_for(max_size)), helper_([this] { serve(); }) {}
  ~TwoThreadPipeline() {
    {
      std::lock_guard lock(mu_);
      stop_.store(true, std::memory_order_release);
    }
    cv_.notify_one();
    helper_.join();
  }
  TwoThreadPipeline(const TwoThreadPipeline&) = delete;
  TwoThreadPipeline& operator=(const TwoThreadPipeline&) = delete;

  // Copies `size` bytes from `src` to `dst`: this thread fills the pieces,
  // the helper empties them; returns when the last byte has landed.
  void copy(uint8_t* dst, const uint8_t* src, uint64_t size) {
    const uint64_t piece = piece_for(size);
    const uint64_t pieces = (size + piece - 1) / piece;
    const uint64_t first = filled_.load(std::memory_order_relaxed);
    {
      std::lock_guard lock(mu_);
      job_ = {dst, size, piece, first};
      job_seq_.fetch_add(1, std::memory_order_release);
    }
    cv_.notify_one();
    for (uint64_t i = 0; i < pieces; ++i) {
      const uint64_t k = first + i;
      while (k >= emptied_.load(std::memory_order_acquire) + kSlots) spin();
      const uint64_t len = std::min(piece, size - i * piece);
      std::memcpy(slot(k), src + i * piece, len);
      filled_.store(k + 1, std::memory_order_release);
    }
    while (emptied_.load(std::memory_order_acquire) < first + pieces) spin();
  }

 private:
  static constexpr uint64_t kSlots = 4;
  struct Job {
    uint8_t* dst;
    uint64_t size;
    uint64_t piece;
    uint64_t first;  // the ring's count of pieces when this copy began
  };

  static void spin() {
    for (int i = 0; i < 64; ++i) __builtin_ia32_pause();
    sched_yield();  // vgpud's idle threads, or the other side, may need this core
  }
  uint8_t* slot(uint64_t k) { return ring_.data() + (k % kSlots) * (ring_.size() / kSlots); }

  void serve() {
    uint64_t seen = 0;
    for (;;) {
      const auto idle = [&] {
        return job_seq_.load(std::memory_order_acquire) == seen &&
               !stop_.load(std::memory_order_acquire);
      };
      const auto since = std::chrono::steady_clock::now();
      while (idle() && std::chrono::steady_clock::now() - since < std::chrono::microseconds(50)) {
        spin();
      }
      Job j;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return !idle(); });
        if (stop_.load(std::memory_order_acquire)) return;
        j = job_;
      }
      ++seen;
      for (uint64_t at = 0, k = j.first; at < j.size; at += j.piece, ++k) {
        while (filled_.load(std::memory_order_acquire) <= k) spin();
        std::memcpy(j.dst + at, slot(k), std::min(j.piece, j.size - at));
        emptied_.store(k + 1, std::memory_order_release);
      }
    }
  }

  std::vector<uint8_t> ring_;
  std::mutex mu_;
  std::condition_variable cv_;
  Job job_{};  // guarded by mu_
  std::atomic<uint64_t> job_seq_{0};
  std::atomic<uint64_t> filled_{0};
  std::atomic<uint64_t> emptied_{0};
  std::atomic<bool> stop_{false};
  std::thread helper_;  // last: starts once the rest is built
};

}  // namespace bp
