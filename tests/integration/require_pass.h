// The check every program test makes: the program ran to its end, exited 0
// and printed its PASS line (tests/programs/common.h).
#pragma once

#include <string>

#include <catch2/catch.hpp>

#include "harness.h"

namespace vgpu::test {

inline void require_pass(const RunResult& r, const std::string& name) {
  INFO(r.output);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("PASS " + name));
}

}  // namespace vgpu::test
