// The Table every vgpuctl listing prints through: the same rows as aligned
// columns, CSV with machine keys, or JSON objects with typed values.
#include "table.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "printed.h"

#include "csv.h"

using namespace vgpu::ctl;
using vgpu::ctl::test::printed;
using nlohmann::json;

namespace {

Table sample() {
  Table t({text_column("STUDENT", "student"), number_column("GPU TIME", "gpu_ns"),
           number_column("UID", "uid"), text_column("COURSE", "course"), table_only("THIS PERIOD"),
           machine_only("period_left_ns")});
  t.add({"ann", Cell("1h30m", int64_t{5400000000000}), "1001", optional_cell("cs101"),
         "1h30m of 2h", int64_t{1800000000000}});
  t.add({"o'brien, jr", Cell("0s", 0), "-", optional_cell(""), "0s (unlimited)", nullptr});
  return t;
}

}  // namespace

TEST_CASE("table: aligned titles and the text people read") {
  const std::string text = printed(sample(), Format::kTable);
  CHECK(text ==
        "STUDENT      GPU TIME  UID   COURSE  THIS PERIOD\n"
        "ann          1h30m     1001  cs101   1h30m of 2h\n"
        "o'brien, jr  0s        -     -       0s (unlimited)\n");
  CHECK(printed(sample(), Format::kTable, false) ==
        "ann          1h30m  1001  cs101  1h30m of 2h\n"
        "o'brien, jr  0s     -     -      0s (unlimited)\n");
}

TEST_CASE("csv: machine keys, machine values, quoted where needed") {
  const std::string text = printed(sample(), Format::kCsv);
  CHECK(text ==
        "student,gpu_ns,uid,course,period_left_ns\n"
        "ann,5400000000000,1001,cs101,1800000000000\n"
        "\"o'brien, jr\",0,,,\n");
  CHECK(printed(sample(), Format::kCsv, false) ==
        "ann,5400000000000,1001,cs101,1800000000000\n"
        "\"o'brien, jr\",0,,,\n");
}

TEST_CASE("json: one object a row, numbers typed, none as null, keys in column order") {
  const json rows = json::parse(printed(sample(), Format::kJson));
  REQUIRE(rows.is_array());
  REQUIRE(rows.size() == 2);
  CHECK(rows[0]["student"] == "ann");
  CHECK(rows[0]["gpu_ns"].is_number_integer());
  CHECK(rows[0]["gpu_ns"] == int64_t{5400000000000});
  CHECK(rows[0]["uid"] == 1001);  // given as text, typed by its column
  CHECK(rows[0]["period_left_ns"] == int64_t{1800000000000});
  CHECK_FALSE(rows[0].contains("this_period"));
  CHECK(rows[1]["uid"].is_null());  // "-" is none
  CHECK(rows[1]["course"].is_null());
  CHECK(rows[1]["period_left_ns"].is_null());
  CHECK(rows[0].size() == 5);
  // --no-header has no effect on JSON.
  CHECK(printed(sample(), Format::kJson, false) == printed(sample(), Format::kJson));
  const std::string text = printed(sample(), Format::kJson);
  CHECK(text.find("\"student\"") < text.find("\"gpu_ns\""));
  Table empty({text_column("VM", "vm")});
  CHECK(json::parse(printed(empty, Format::kJson)) == json::array());
}

TEST_CASE("formats by name, and cells for times and VM lists") {
  Format f = Format::kTable;
  CHECK(parse_format("csv", &f));
  CHECK(f == Format::kCsv);
  CHECK(parse_format("json", &f));
  CHECK(f == Format::kJson);
  CHECK_FALSE(parse_format("xml", &f));
  const Cell t = time_cell(1736173805);
  CHECK(t.text == "2025-01-06 14:30:05");
  CHECK(t.value == "2025-01-06T14:30:05Z");
  CHECK(time_cell(0).value.is_null());
  const Cell vms = names_cell({"a", "b"});
  CHECK(vms.text == "a,b");
  CHECK(vms.value == "a b");
}
