// Human units: what parses, what is refused, and what comes back out.
#include <catch2/catch.hpp>

#include "vgpu/policy/units.h"

using namespace vgpu::policy;
using Code = vgpu::Result::Code;

namespace {

constexpr int64_t kS = 1000000000;

int64_t dur(const char* text) {
  int64_t ns = -1;
  REQUIRE(parse_duration(text, &ns).ok());
  return ns;
}

bool bad_duration(const char* text) {
  int64_t ns = 0;
  const vgpu::Result r = parse_duration(text, &ns);
  if (!r.ok()) {
    CHECK(r.is(Code::kInvalidArgument));
    CHECK_FALSE(r.message().empty());
    CHECK(ns == 0);  // untouched
  }
  return !r.ok();
}

}  // namespace

TEST_CASE("durations parse in human units") {
  CHECK(dur("90m") == 90 * 60 * kS);
  CHECK(dur("1h30m") == 90 * 60 * kS);
  CHECK(dur("2.5h") == 9000 * kS);
  CHECK(dur("500ms") == kS / 2);
  CHECK(dur("1d") == 86400 * kS);
  CHECK(dur("1w") == 7 * 86400 * kS);
  CHECK(dur("0s") == 0);
  CHECK(bad_duration("banana"));
  CHECK(bad_duration("-5m"));
  CHECK(bad_duration("5"));
  CHECK(bad_duration("5 parsecs"));
  CHECK(bad_duration(""));
  CHECK(bad_duration("99999999999w"));
}

TEST_CASE("sizes parse in binary and decimal units, never negative") {
  uint64_t b = 0;
  REQUIRE(parse_bytes("4GiB", &b).ok());
  CHECK(b == 4ull << 30);
  REQUIRE(parse_bytes("1.5GiB", &b).ok());
  CHECK(b == 3ull << 29);
  REQUIRE(parse_bytes("512mib", &b).ok());
  CHECK(b == 512ull << 20);
  REQUIRE(parse_bytes("4GB", &b).ok());
  CHECK(b == 4000000000ull);
  REQUIRE(parse_bytes("4096", &b).ok());
  CHECK(b == 4096);
  const vgpu::Result negative = parse_bytes("-1GiB", &b);
  CHECK(negative.is(Code::kInvalidArgument));
  CHECK_THAT(negative.message(), Catch::Contains("negative"));
  CHECK(b == 4096);  // a refused parse leaves the value as it was
  CHECK(parse_bytes("lots", &b).is(Code::kInvalidArgument));
  CHECK(parse_bytes("4 GiB", &b).is(Code::kInvalidArgument));
}

TEST_CASE("GPU-time budgets name a period") {
  GpuTime g;
  REQUIRE(parse_gpu_time("2h/week", &g).ok());
  CHECK_FALSE(g.unlimited);
  CHECK(g.budget_ns == 7200 * kS);
  CHECK(g.period == PeriodKind::kWeek);
  REQUIRE(parse_gpu_time("90m/day", &g).ok());
  CHECK(g.period == PeriodKind::kDay);
  CHECK(format_gpu_time(g) == "1h30m/day");
  REQUIRE(parse_gpu_time("20h/month", &g).ok());
  CHECK(g.period == PeriodKind::kMonth);
  CHECK(g.budget_ns == 20 * 3600 * kS);
  CHECK(format_gpu_time(g) == "20h/month");
  const vgpu::Result months = parse_gpu_time("20h/months", &g);
  CHECK(months.is(Code::kInvalidArgument));
  CHECK_THAT(months.message(), Catch::Contains("20h/month"));  // the examples name it
  REQUIRE(parse_gpu_time("10h/2025-01-06..2025-03-31", &g).ok());
  CHECK(g.period == PeriodKind::kRange);
  CHECK(format_date(g.range_start) == "2025-01-06");
  CHECK(format_date(g.range_end) == "2025-04-01");  // the range includes its last day
  CHECK(format_gpu_time(g) == "10h/2025-01-06..2025-03-31");
  REQUIRE(parse_gpu_time("unlimited", &g).ok());
  CHECK(g.unlimited);
  CHECK(parse_gpu_time("banana", &g).is(Code::kInvalidArgument));
  CHECK(parse_gpu_time("2h/fortnight", &g).is(Code::kInvalidArgument));
  CHECK(parse_gpu_time("-2h/week", &g).is(Code::kInvalidArgument));
  CHECK(parse_gpu_time("2h/2025-03-01..2025-02-01", &g).is(Code::kInvalidArgument));
  CHECK(parse_gpu_time("2h/2025-02-30..2025-03-01", &g).is(Code::kInvalidArgument));
  // A bad part says which budget it was in, and what was wrong with the part.
  const vgpu::Result part = parse_gpu_time("2h/2025-02-30..2025-03-01", &g);
  CHECK_THAT(part.message(), Catch::Contains("not a GPU-time budget: '2h/2025-02-30..2025-03-01'"));
  CHECK_THAT(part.message(), Catch::Contains("no such date"));
  CHECK(g.unlimited);  // still the "unlimited" parsed before
}

TEST_CASE("dates are UTC; --until includes the whole day") {
  int64_t t = 0;
  REQUIRE(parse_date("2025-01-06", false, 0, &t).ok());
  CHECK(t == 1736121600);
  REQUIRE(parse_date("2025-01-06", true, 0, &t).ok());
  CHECK(t == 1736121600 + 86400);
  REQUIRE(parse_date("2025-01-06T14:30", false, 0, &t).ok());
  CHECK(t == 1736121600 + 14 * 3600 + 30 * 60);
  REQUIRE(parse_date("2024-02-29", false, 0, &t).ok());
  CHECK(parse_date("2023-02-29", false, 0, &t).is(Code::kInvalidArgument));
  CHECK(parse_date("yesterday", false, 0, &t).is(Code::kInvalidArgument));
  REQUIRE(parse_date("now", false, 1234, &t).ok());
  CHECK(t == 1234);
  CHECK(format_time(1736121600 + 3661) == "2025-01-06 01:01:01");
}

TEST_CASE("durations and sizes print in human units") {
  CHECK(format_duration(0) == "0s");
  CHECK(format_duration(7200 * kS) == "2h");
  CHECK(format_duration(5400 * kS) == "1h30m");
  CHECK(format_duration(12500000000) == "12.5s");
  CHECK(format_duration(850000000) == "850ms");
  CHECK(format_duration(61 * kS) == "1m1s");
  CHECK(format_duration(7200 * kS - 200000000) == "2h");  // 1h59m59.8s, to the second
  CHECK(format_duration(7200 * kS - 2 * kS + 1) == "1h59m58s");
  CHECK(format_duration(119 * kS + 970000000) == "2m");  // never "1m60s"
  CHECK(format_bytes(4ull << 30) == "4GiB");
  CHECK(format_bytes(3ull << 29) == "1.5GiB");
  CHECK(format_bytes(100) == "100B");
}
