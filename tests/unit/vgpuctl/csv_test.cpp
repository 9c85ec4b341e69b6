// The CSV reader and writer (RFC 4180) that rosters and -o csv go through.
#include "csv.h"

#include <catch2/catch.hpp>

using namespace vgpu::ctl;

namespace {

std::vector<CsvRecord> parsed(std::string_view text) {
  std::vector<CsvRecord> out;
  std::string why;
  INFO(text);
  REQUIRE(parse_csv(text, &out, &why));
  return out;
}

std::string refused(std::string_view text) {
  std::vector<CsvRecord> out;
  std::string why;
  CHECK_FALSE(parse_csv(text, &out, &why));
  return why;
}

using Fields = std::vector<std::string>;

}  // namespace

TEST_CASE("plain records, with LF or CRLF line ends") {
  for (const char* text :
       {"name,vm\nann,ann-vm\n", "name,vm\r\nann,ann-vm\r\n", "name,vm\nann,ann-vm"}) {
    const auto r = parsed(text);
    REQUIRE(r.size() == 2);
    CHECK(r[0].fields == Fields{"name", "vm"});
    CHECK(r[1].fields == Fields{"ann", "ann-vm"});
    CHECK(r[1].line == 2);
  }
}

TEST_CASE("quoted fields hold commas, doubled quotes and line breaks") {
  const auto r = parsed("a,b\n\"x, y\",\"say \"\"hi\"\"\"\n\"two\nlines\",z\nlast,\"\"\n");
  REQUIRE(r.size() == 4);
  CHECK(r[1].fields == Fields{"x, y", "say \"hi\""});
  CHECK(r[2].fields == Fields{"two\nlines", "z"});
  CHECK(r[3].fields == Fields{"last", ""});
  CHECK(r[3].line == 5);  // the quoted line break counts
}

TEST_CASE("empty fields, blank lines and a byte-order mark") {
  const auto r = parsed("\xEF\xBB\xBFname,vm,uid\n\nann,,\n\r\n,,\n");
  REQUIRE(r.size() == 3);
  CHECK(r[0].fields == Fields{"name", "vm", "uid"});
  CHECK(r[1].fields == Fields{"ann", "", ""});
  CHECK(r[1].line == 3);
  CHECK(r[2].fields == Fields{"", "", ""});
  CHECK(r[2].line == 5);
  CHECK(parsed("").empty());
  CHECK(parsed("\n\n").empty());
}

TEST_CASE("malformed quoting is refused with the line it is on") {
  CHECK_THAT(refused("name\n\"ann\n"), Catch::Contains("line 2: a quoted field is not closed"));
  CHECK_THAT(refused("name\nan\"n\n"), Catch::Contains("line 2: a quote inside an unquoted field"));
  CHECK_THAT(refused("a,b\nx,y\n\"ann\"x,y\n"),
             Catch::Contains("line 3: text after a closing quote"));
}

TEST_CASE("fields are quoted only when they must be, and read back the same") {
  CHECK(csv_field("plain") == "plain");
  CHECK(csv_field("") == "");
  CHECK(csv_field("a,b") == "\"a,b\"");
  CHECK(csv_field("say \"hi\"") == "\"say \"\"hi\"\"\"");
  CHECK(csv_field("two\nlines") == "\"two\nlines\"");
  const Fields tricky = {"a,b", "\"", "", "x\r\ny", " spaced "};
  const auto back = parsed(csv_line(tricky) + "\n");
  REQUIRE(back.size() == 1);
  CHECK(back[0].fields == tricky);
}
