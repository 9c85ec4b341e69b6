// CSV as RFC 4180 has it, both ways: vgpuctl writes listings with -o csv
// and reads rosters (student import). Fields are separated by commas; a
// field holding a comma, a quote or a line break is quoted, with its quotes
// doubled. Records end with LF or CRLF.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace vgpu::ctl {

struct CsvRecord {
  int line = 0;  // the line of the file the record starts on (1: the first)
  std::vector<std::string> fields;
};

// Splits `text` into records. Blank lines and a leading UTF-8 byte-order mark
// (spreadsheets write one) are skipped. False, with `why` naming the line, for
// a quoted field that never closes or a stray quote: such a file is not
// guessed at.
bool parse_csv(std::string_view text, std::vector<CsvRecord>* out, std::string* why);

// One field as it is written: quoted only if it must be.
std::string csv_field(std::string_view field);
// One record, without its line end.
std::string csv_line(const std::vector<std::string>& fields);

}  // namespace vgpu::ctl
