#include "device_output.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "driver_state.h"
#include "log.h"

namespace vgpu::driver::device_output {

namespace {

std::atomic<bool> expected{false};
// The launching context's cudaLimitPrintfFifoSize, read at the launch: the
// flush at exit runs when no context is current any more.
std::atomic<uint64_t> fifo_limit{1 << 20};
constexpr uint64_t kTakeBytes = 64 * 1024;

// Output may wait on the host. Output of kernels still unflushed when the
// program ends is printed, as the driver prints it when the runtime tears the
// context down.
void arm() {
  if (expected.exchange(true, std::memory_order_relaxed)) return;
  static std::once_flag once;
  std::call_once(once, [] { std::atexit(flush_at_exit); });
}

}  // namespace

void expect() {
  size_t limit = 0;
  if (cuCtxGetLimit(&limit, CU_LIMIT_PRINTF_FIFO_SIZE) == CUDA_SUCCESS) {
    fifo_limit.store(limit, std::memory_order_relaxed);
  }
  arm();
}

void expect_report() { arm(); }

void flush_at_exit() {
  if (!expected.load(std::memory_order_relaxed)) return;
  {
    Connection& c = Connection::instance();
    Connection::Lock lock(c);
    proto::DeviceSynchronizeReply rep{};
    (void)c.call(proto::DeviceSynchronizeRequest{}, {}, &rep);  // the kernels still running
  }
  flush();
}

namespace {

// Takes one stream's output (1: printf, for stdout; 2: assert messages, for
// stderr) from the host and writes it. Returns the bytes dropped.
uint64_t take(Connection& c, uint32_t stream, FILE* to, uint64_t limit) {
  uint64_t written = 0, dropped = 0;
  for (;;) {
    uint64_t offset = 0;
    if (!ok(c.stage(kTakeBytes, &offset))) break;
    proto::DeviceOutputTakeReply rep{};
    const Status s = c.call(proto::DeviceOutputTakeRequest{offset, kTakeBytes, stream, 0}, {}, &rep);
    if (!ok(s) || rep.bytes > kTakeBytes) {
      c.unstage(offset);
      break;
    }
    uint64_t keep = std::min(rep.bytes, limit - std::min(limit, written));
    if (keep < rep.bytes) {  // the FIFO is full: whole lines only, as it keeps whole records
      const auto* text = reinterpret_cast<const char*>(c.data(offset));
      while (keep > 0 && text[keep - 1] != '\n') --keep;
      written = limit;
    }
    // Through the program's own stdio buffer, after what it printed before.
    std::fwrite(c.data(offset), 1, keep, to);
    written = std::min(limit, written + keep);
    dropped += rep.bytes - keep + rep.dropped;
    c.unstage(offset);
    if (rep.bytes < kTakeBytes) break;
  }
  std::fflush(to);
  return dropped;
}

}  // namespace

void flush() {
  if (!expected.exchange(false, std::memory_order_relaxed)) return;
  const uint64_t limit = fifo_limit.load(std::memory_order_relaxed);
  uint64_t dropped = 0;
  {
    Connection& c = Connection::instance();
    Connection::Lock lock(c);
    dropped = take(c, 1, stdout, limit);
    (void)take(c, 2, stderr, UINT64_MAX);
  }
  if (dropped) {
    intercept::log_line("kernels printed %llu bytes more than the printf FIFO holds "
                        "(cudaLimitPrintfFifoSize %llu); dropped",
                        static_cast<unsigned long long>(dropped), static_cast<unsigned long long>(limit));
  }
}

}  // namespace vgpu::driver::device_output
