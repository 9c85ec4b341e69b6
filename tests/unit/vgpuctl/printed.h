// What a Table prints in one format, as a string (the listing tests compare it).
#pragma once

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "table.h"

namespace vgpu::ctl::test {

inline std::string printed(const Table& t, Format f, bool header = true) {
  char* buf = nullptr;
  size_t size = 0;
  FILE* out = open_memstream(&buf, &size);
  REQUIRE(out);
  t.print(f, header, out);
  std::fclose(out);
  std::string text(buf, size);
  std::free(buf);
  return text;
}

}  // namespace vgpu::ctl::test
