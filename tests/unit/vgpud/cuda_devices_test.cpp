// --cuda-device's values (backend_choice.h): ordinals, each once, or all alone.
#include <catch2/catch.hpp>

#include "backend_choice.h"

using vgpu::Result;
using vgpu::daemon::parse_cuda_devices;

TEST_CASE("cuda devices: ordinals in order, or all for every GPU") {
  std::vector<int> out = {9};
  REQUIRE(parse_cuda_devices({"2", "0"}, &out).ok());
  CHECK(out == std::vector<int>{2, 0});
  REQUIRE(parse_cuda_devices({"all"}, &out).ok());
  CHECK(out.empty());
}

TEST_CASE("cuda devices: a bad value is refused by name, and nothing changes") {
  std::vector<int> out = {7};
  for (const std::vector<std::string>& bad : {std::vector<std::string>{"-1"},
                                              {"one"},
                                              {"1x"},
                                              {"0", "0"},
                                              {"all", "1"},
                                              {""},
                                              {"99999999999"}}) {
    const Result r = parse_cuda_devices(bad, &out);
    CAPTURE(bad);
    CHECK(r.code() == Result::Code::kInvalidArgument);
    CHECK(out == std::vector<int>{7});
  }
  CHECK_THAT(parse_cuda_devices({"one"}, &out).message(), Catch::Contains("'one'"));
}
