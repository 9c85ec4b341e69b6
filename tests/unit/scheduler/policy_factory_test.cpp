#include <catch2/catch.hpp>

#include "vgpu/scheduler/policy_factory.h"

using namespace vgpu;
using namespace vgpu::scheduler;

TEST_CASE("make_policy builds each named policy") {
  for (std::string_view name : kPolicyNames) {
    std::unique_ptr<SchedulingPolicy> p;
    std::string why;
    REQUIRE(ok(make_policy(name, PolicyOptions{}, &p, &why)));
    CHECK(p->name() == name);
  }
  CHECK(kDefaultPolicy == "fair");
}

TEST_CASE("make_policy refuses unknown names and slices out of range, saying why") {
  std::unique_ptr<SchedulingPolicy> p;
  std::string why;
  CHECK(make_policy("lottery", PolicyOptions{}, &p, &why) == Status::kInvalidValue);
  CHECK(why.find("lottery") != std::string::npos);
  CHECK(p == nullptr);
  CHECK(make_policy("fair", PolicyOptions{100 * kMicrosecond}, &p, &why) == Status::kInvalidValue);
  CHECK(why.find("slice") != std::string::npos);
  CHECK(make_policy("fair", PolicyOptions{51 * kMillisecond}, &p, &why) == Status::kInvalidValue);
  CHECK(ok(make_policy("fair", PolicyOptions{kMinSlice}, &p, &why)));
  CHECK(ok(make_policy("fair", PolicyOptions{kMaxSlice}, &p, &why)));
}
