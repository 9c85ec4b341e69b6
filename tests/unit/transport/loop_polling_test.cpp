// The host loop's rule for polling instead of sleeping (loop_polling.h).
#include <cstring>
#include <vector>

#include <catch2/catch.hpp>

#include "loop_polling.h"
#include "vgpu/protocol/codec.h"

using namespace vgpu;
using namespace vgpu::transport;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

std::vector<uint8_t> message(uint32_t flags) {
  std::vector<uint8_t> m(VGPU_MSG_HEADER_SIZE);
  const auto h = proto::make_header(static_cast<uint16_t>(proto::Op::Malloc), 1, flags, 0, 0);
  std::memcpy(m.data(), &h, sizeof h);
  return m;
}

}  // namespace

TEST_CASE("a quiet request (an asynchronous launch) wants no answer; any other does") {
  CHECK(wants_reply(message(0)));
  CHECK_FALSE(wants_reply(message(VGPU_MSG_QUIET)));
  CHECK_FALSE(wants_reply({}));  // too short to be a request
}

TEST_CASE("with no answer owed the loop polls 50 µs after its last work, then sleeps") {
  const auto t0 = Clock::now();
  const LoopActivity a{t0, t0 - 1ms, t0 - 500us};  // answered: the reply came after the read
  CHECK(polled_so_far(a, t0 + 10us) == std::optional<Clock::duration>(10us));
  CHECK(polled_so_far(a, t0 + kPollBeforeSleep - 1us).has_value());
  CHECK_FALSE(polled_so_far(a, t0 + kPollBeforeSleep).has_value());
}

TEST_CASE("while an answer is owed the loop polls up to 1 ms, and a reply restarts the 50 µs") {
  const auto t0 = Clock::now();
  // A request read at t0, its reply not yet written: queued work is running.
  LoopActivity a{t0, t0, t0 - 1ms};
  CHECK(polled_so_far(a, t0 + 300us).has_value());  // past 50 µs: still polling
  CHECK(polled_so_far(a, t0 + kPollWhileOwed - 1us).has_value());
  CHECK_FALSE(polled_so_far(a, t0 + kPollWhileOwed).has_value());  // a long kernel: sleep
  // The reply lands at t0 + 300 µs: 50 µs more for the program's next request.
  a.replied = t0 + 300us;
  CHECK(polled_so_far(a, t0 + 320us) == std::optional<Clock::duration>(20us));
  CHECK_FALSE(polled_so_far(a, t0 + 300us + kPollBeforeSleep).has_value());
}
