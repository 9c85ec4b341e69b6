// vgpud's journal fields (journal_log.h): what `journalctl VM=alice` and
// `journalctl COURSE=gpu101 -p warning` select on.
#include "journal_log.h"

#include "vgpu/host/vm_people.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>

using vgpu::daemon::journal_fields;
using vgpu::host::remember_vm;

namespace {

bool has(const std::vector<std::string>& fields, const std::string& field) {
  return std::find(fields.begin(), fields.end(), field) != fields.end();
}

bool has_name(const std::vector<std::string>& fields, const std::string& name) {
  return std::any_of(fields.begin(), fields.end(),
                     [&](const std::string& f) { return f.rfind(name + "=", 0) == 0; });
}

}  // namespace

TEST_CASE("journal fields: the message and its priority and identifier", "[journal]") {
  const auto f = journal_fields(spdlog::level::err, "vgpud: cannot open the database");
  REQUIRE(!f.empty());
  CHECK(f[0] == "MESSAGE=vgpud: cannot open the database");
  CHECK(has(f, "PRIORITY=3"));
  CHECK(has(f, "SYSLOG_IDENTIFIER=vgpud"));
  CHECK_FALSE(has_name(f, "VM"));
  CHECK(has(journal_fields(spdlog::level::warn, "x"), "PRIORITY=4"));
  CHECK(has(journal_fields(spdlog::level::info, "x"), "PRIORITY=6"));
  CHECK(has(journal_fields(spdlog::level::debug, "x"), "PRIORITY=7"));
  CHECK(has(journal_fields(spdlog::level::critical, "x"), "PRIORITY=2"));
}

TEST_CASE("journal fields: a line about a VM names it and whom it belongs to", "[journal]") {
  // Not admitted yet: the VM only.
  auto f = journal_fields(spdlog::level::info, "vm lab-07: channel 3 opened (pid 9, uid 0)");
  CHECK(has(f, "VM=lab-07"));
  CHECK_FALSE(has_name(f, "STUDENT"));

  remember_vm(7, {"lab-07", "alice", "gpu101"});
  f = journal_fields(spdlog::level::warn, "vm lab-07: budget spent");
  CHECK(has(f, "VM=lab-07"));
  CHECK(has(f, "STUDENT=alice"));
  CHECK(has(f, "COURSE=gpu101"));

  // Rebound to another student: later lines name the new one.
  remember_vm(7, {"lab-07", "bob", "gpu102"});
  f = journal_fields(spdlog::level::info, "vm lab-07: channel 4 opened");
  CHECK(has(f, "STUDENT=bob"));
  CHECK(has(f, "COURSE=gpu102"));

  // Unassigned: no empty fields.
  remember_vm(8, {"spare", "", ""});
  f = journal_fields(spdlog::level::info, "vm spare: channel 1 opened");
  CHECK(has(f, "VM=spare"));
  CHECK_FALSE(has_name(f, "STUDENT"));
  CHECK_FALSE(has_name(f, "COURSE"));
}

TEST_CASE("journal fields: only a line that starts with a VM's name gets VM=", "[journal]") {
  for (const char* line : {"vgpud: vm lab-07: something", "vm : empty name", "vm bad name: spaces",
                           "vm lab-07 without a colon", "vm", "vm x"}) {
    INFO(line);
    CHECK_FALSE(has_name(journal_fields(spdlog::level::info, line), "VM"));
  }
  const std::string long_name(64, 'a');
  CHECK_FALSE(has_name(journal_fields(spdlog::level::info, "vm " + long_name + ": x"), "VM"));
  const std::string longest(63, 'a');
  CHECK(has(journal_fields(spdlog::level::info, "vm " + longest + ": x"), "VM=" + longest));
}

TEST_CASE("the journal is used when JOURNAL_STREAM names standard error", "[journal]") {
  struct stat st{};
  REQUIRE(fstat(STDERR_FILENO, &st) == 0);
  const std::string ours =
      std::to_string(static_cast<unsigned long long>(st.st_dev)) + ":" +
      std::to_string(static_cast<unsigned long long>(st.st_ino));
  setenv("JOURNAL_STREAM", ours.c_str(), 1);
  CHECK(vgpu::daemon::stderr_is_journal());
  // A stream systemd gave a parent whose stderr this process no longer has.
  const std::string other = std::to_string(static_cast<unsigned long long>(st.st_dev)) + ":" +
                            std::to_string(static_cast<unsigned long long>(st.st_ino) + 1);
  setenv("JOURNAL_STREAM", other.c_str(), 1);
  CHECK_FALSE(vgpu::daemon::stderr_is_journal());
  setenv("JOURNAL_STREAM", "garbage", 1);
  CHECK_FALSE(vgpu::daemon::stderr_is_journal());
  unsetenv("JOURNAL_STREAM");
  CHECK_FALSE(vgpu::daemon::stderr_is_journal());
}
