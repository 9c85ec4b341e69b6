// How long a waiting program polls while its copies are in flight.
#include <catch2/catch.hpp>

#include "copy_polling.h"

using namespace std::chrono_literals;
using vgpu::intercept::kMaxCopyPoll;
using vgpu::intercept::poll_for_copies;

TEST_CASE("with no copy in flight a waiter polls the usual while") {
  REQUIRE(poll_for_copies(0) == vgpu::transport::kPollBeforeSleep);
}

TEST_CASE("a waiter polls about as long as the bytes in flight take at 4 GB/s") {
  // 1 MiB at 4000 bytes a microsecond: 262 µs on top of the usual poll.
  REQUIRE(poll_for_copies(1 << 20) == vgpu::transport::kPollBeforeSleep + 262us);
  REQUIRE(poll_for_copies(4 << 20) > poll_for_copies(1 << 20));
}

TEST_CASE("however much is in flight, a waiter polls at most a millisecond") {
  REQUIRE(poll_for_copies(32ull << 20) == kMaxCopyPoll);
  REQUIRE(poll_for_copies(~uint64_t{0}) == kMaxCopyPoll);
  REQUIRE(kMaxCopyPoll == 1000us);
}
