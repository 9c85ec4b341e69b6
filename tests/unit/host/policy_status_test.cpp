// The one place a policy store refusal becomes a CUDA status (policy_status.h).
#include <catch2/catch.hpp>

#include "vgpu/host/policy_status.h"

using vgpu::Result;
using vgpu::Status;
using vgpu::host::guest_status;

TEST_CASE("a store refusal maps to a CUDA status by its category, not its text") {
  CHECK(guest_status(Result()) == Status::kSuccess);
  CHECK(guest_status(Result::permission_denied("x")) == Status::kNotPermitted);
  CHECK(guest_status(Result::read_only("x")) == Status::kNotPermitted);
  for (const Result& r : {Result::invalid_argument("x"), Result::not_found("x"),
                          Result::already_exists("x"), Result::conflict("x")}) {
    CHECK(guest_status(r) == Status::kInvalidValue);
  }
  CHECK(guest_status(Result::busy("x")) == Status::kUnknown);
  CHECK(guest_status(Result::storage("x")) == Status::kUnknown);
  CHECK(guest_status(Result::unavailable("x")) == Status::kUnknown);
  // The text says nothing: a "permission denied" message in another category
  // is that category.
  CHECK(guest_status(Result::storage("permission denied: ...")) == Status::kUnknown);
}
