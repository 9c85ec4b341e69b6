#include "staging_area.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <new>

namespace vgpu::executor::cuda {
namespace {

constexpr uint64_t kWaitSliceNs = 5'000'000;  // how often `stop` is asked
constexpr int kSpins = 2000;                   // before sleeping: most waits are short

uint32_t* word(std::atomic<uint32_t>& a) { return reinterpret_cast<uint32_t*>(&a); }

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

StagingArea::StagingArea(uint8_t* region, uint64_t slot_bytes)
    : region_(region), slot_bytes_(slot_bytes) {
  new (region_) StagingHeader{};  // the atomics live in the shared page
}

uint32_t StagingArea::chunks(uint64_t size) const {
  return static_cast<uint32_t>((size + slot_bytes_ - 1) / slot_bytes_);
}

uint64_t StagingArea::chunk_length(uint64_t size, uint32_t chunk) const {
  const uint64_t begin = uint64_t{chunk} * slot_bytes_;
  return begin >= size ? 0 : std::min(slot_bytes_, size - begin);
}

void StagingArea::reset() {
  header()->filled.store(0, std::memory_order_release);
  header()->consumed.store(0, std::memory_order_release);
}

void StagingArea::publish(std::atomic<uint32_t>& counter, uint32_t n) {
  counter.store(n, std::memory_order_release);
  // Shared (not FUTEX_PRIVATE): the other side is another process.
  syscall(SYS_futex, word(counter), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

void StagingArea::wake_all() {
  syscall(SYS_futex, word(header()->filled), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
  syscall(SYS_futex, word(header()->consumed), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

StagingArea::Wait StagingArea::wait(std::atomic<uint32_t>& counter, uint32_t n,
                                    uint64_t deadline_ns, const std::function<bool()>& stop) {
  for (int i = 0; i < kSpins; ++i) {
    if (counter.load(std::memory_order_acquire) >= n) return Wait::kReady;
    cpu_relax();
  }
  for (;;) {
    const uint32_t seen = counter.load(std::memory_order_acquire);
    if (seen >= n) return Wait::kReady;
    // What stops the wait may come right after the counter's last step (the
    // worker publishes the last chunk, then answers): a `stop` seen after
    // `seen` was read says nothing of the counter now, so look once more.
    if (stop && stop()) {
      return counter.load(std::memory_order_acquire) >= n ? Wait::kReady : Wait::kStopped;
    }
    const uint64_t now = monotonic_ns();
    if (now >= deadline_ns) return Wait::kTimedOut;
    const uint64_t slice = std::min(deadline_ns - now, kWaitSliceNs);
    timespec ts{static_cast<time_t>(slice / 1'000'000'000ull),
                static_cast<long>(slice % 1'000'000'000ull)};
    syscall(SYS_futex, word(counter), FUTEX_WAIT, seen, &ts, nullptr, 0);
  }
}

}  // namespace vgpu::executor::cuda
