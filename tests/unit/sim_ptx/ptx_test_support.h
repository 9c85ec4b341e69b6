// What the PTX interpreter's tests share: kernels.cu's PTX parsed once, CUDA-style parameter
// packing, and a launch on host buffers (global memory is plain host memory here).
#pragma once

#include <catch2/catch.hpp>

#include <array>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "ptx/ptx_interpreter.h"
#include "ptx/ptx_program.h"

namespace vgpu::executor::sim::ptx::test {

inline float fl(int i) { return static_cast<float>(i); }

inline std::unique_ptr<Program> parse_file(const char* path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string why;
  auto parsed = parse(ss.str(), &why);
  INFO(path << ": " << why);
  REQUIRE(parsed);
  return parsed;
}

// kernels.cu, as compute_75 PTX.
inline const Program& program() {
  static std::unique_ptr<Program> p = parse_file(VGPU_TEST_PTX);
  return *p;
}

// kernels_sm80.cu, as compute_80 PTX.
inline const Program& program_sm80() {
  static std::unique_ptr<Program> p = parse_file(VGPU_TEST_PTX_SM80);
  return *p;
}

// Packs kernel arguments as CUDA does: each at its natural alignment.
struct Params {
  std::vector<uint8_t> bytes;
  template <typename T>
  Params& add(T v) {
    size_t off = (bytes.size() + alignof(T) - 1) & ~(alignof(T) - 1);
    bytes.resize(off + sizeof(T));
    memcpy(bytes.data() + off, &v, sizeof(T));
    return *this;
  }
};

inline Result launch(const char* entry, std::array<uint32_t, 3> grid, std::array<uint32_t, 3> block,
                     const Params& params, const Environment& env = {}, uint64_t dynamic_shared = 0) {
  Launch l{{grid[0], grid[1], grid[2]}, {block[0], block[1], block[2]}, dynamic_shared, params.bytes.data(), params.bytes.size()};
  return run(program(), entry, l, env);
}

}  // namespace vgpu::executor::sim::ptx::test

#define REQUIRE_OK(r) do { ::vgpu::executor::sim::ptx::Result r_ = (r); INFO(r_.message); REQUIRE(r_.outcome == ::vgpu::executor::sim::ptx::Outcome::kOk); } while (0)
