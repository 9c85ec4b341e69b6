#include <catch2/catch.hpp>

#include "vgpu/scheduler/policy_factory.h"

using namespace vgpu;
using namespace vgpu::scheduler;

TEST_CASE("make_policy builds each named policy") {
  for (std::string_view name : kPolicyNames) {
    std::unique_ptr<SchedulingPolicy> p;
    REQUIRE(make_policy(name, PolicyOptions{}, &p).ok());
    CHECK(p->name() == name);
  }
  CHECK(kDefaultPolicy == "fair");
}

TEST_CASE("make_policy refuses unknown names and slices out of range, saying why") {
  std::unique_ptr<SchedulingPolicy> p;
  using Code = Result::Code;
  const Result name = make_policy("lottery", PolicyOptions{}, &p);
  CHECK(name.is(Code::kInvalidArgument));
  CHECK(name.message().find("lottery") != std::string::npos);
  CHECK(p == nullptr);
  const Result slice = make_policy("fair", PolicyOptions{100 * kMicrosecond}, &p);
  CHECK(slice.is(Code::kInvalidArgument));
  CHECK(slice.message().find("slice") != std::string::npos);
  CHECK(make_policy("fair", PolicyOptions{51 * kMillisecond}, &p).is(Code::kInvalidArgument));
  CHECK(make_policy("fair", PolicyOptions{kMinSlice}, &p).ok());
  CHECK(make_policy("fair", PolicyOptions{kMaxSlice}, &p).ok());
}
