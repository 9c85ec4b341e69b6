// vgpud without --db keeps its database where a reboot does not clear it
// (cli/common/db_path.h), makes that folder private, and points at a
// database an older vgpud left in the runtime directory. Run as an ordinary
// user (nobody, when the tests run as root) with XDG_STATE_HOME in a
// temporary folder: root's default, /var/lib/vgpu, is not the tests' to touch.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "quota_harness.h"

namespace fs = std::filesystem;
using namespace vgpu::test;

namespace {

constexpr int kNobody = 65534;

// vgpud for about four seconds, then SIGINT (a clean stop), as an ordinary
// user; the temporary folders (state_home's parent too: a TempDir is 0700)
// become that user's.
RunResult run_vgpud_briefly(const std::string& state_home, const std::string& runtime_dir) {
  const int uid = geteuid() == 0 ? kNobody : -1;
  if (uid >= 0) {
    for (const auto& d : {fs::path(state_home).parent_path(), fs::path(state_home),
                          fs::path(runtime_dir)}) {
      REQUIRE(chown(d.c_str(), kNobody, kNobody) == 0);
    }
  }
  return run_command({"/usr/bin/env", "XDG_STATE_HOME=" + state_home, "/usr/bin/timeout", "-s",
                      "INT", "4", vgpud_path(), "--backend", "sim", "--libvirt", "none",
                      "--runtime-dir", runtime_dir},
                     uid, std::chrono::seconds(60));
}

}  // namespace

TEST_CASE("without --db, vgpud keeps its database in the user's state folder", "[paths]") {
  TempDir dir;
  const std::string state = dir.path() + "/state", run = dir.path() + "/run";
  fs::create_directories(state);
  fs::create_directories(run);

  const RunResult r = run_vgpud_briefly(state, run);
  INFO(r.output);
  CHECK(r.exit_code == 124);  // timeout's status: vgpud ran until the SIGINT
  const std::string db = state + "/vgpu/vgpu.db";
  CHECK(r.output.find("database " + db) != std::string::npos);
  REQUIRE(fs::exists(db));
  CHECK(query_int(db, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'courses'") == 1);
  CHECK(fs::status(state + "/vgpu").permissions() == fs::perms::owner_all);
  CHECK_FALSE(fs::exists(run + "/vgpu.db"));  // not in the runtime directory any more
  CHECK(r.output.find("an older vgpud") == std::string::npos);
}

TEST_CASE("a database left in the runtime directory is pointed out and left alone", "[paths]") {
  TempDir dir;
  const std::string state = dir.path() + "/state", run = dir.path() + "/run";
  fs::create_directories(state);
  fs::create_directories(run);
  const std::string old = run + "/vgpu.db";
  std::ofstream(old) << "an old database";

  const RunResult r = run_vgpud_briefly(state, run);
  INFO(r.output);
  CHECK(r.exit_code == 124);
  CHECK(r.output.find(old + " holds a database an older vgpud kept in its runtime directory") !=
        std::string::npos);
  CHECK(r.output.find("--db " + old) != std::string::npos);
  std::ifstream in(old);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  CHECK(bytes == "an old database");
  CHECK(fs::exists(state + "/vgpu/vgpu.db"));
}

TEST_CASE("a default folder that cannot be made is a clear error", "[paths]") {
  TempDir dir;
  const std::string run = dir.path() + "/run";
  fs::create_directories(run);
  // The state folder's parent is a file: nothing can be made under it.
  const std::string blocker = dir.path() + "/file";
  std::ofstream(blocker) << "x";
  if (geteuid() == 0) {
    REQUIRE(chown(dir.path().c_str(), kNobody, kNobody) == 0);
    REQUIRE(chown(run.c_str(), kNobody, kNobody) == 0);
  }
  const RunResult r = run_command(
      {"/usr/bin/env", "XDG_STATE_HOME=" + blocker + "/state", vgpud_path(), "--backend", "sim",
       "--libvirt", "none", "--runtime-dir", run},
      geteuid() == 0 ? kNobody : -1, std::chrono::seconds(60));
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("cannot create " + blocker + "/state/vgpu for the database") !=
        std::string::npos);
  CHECK(r.output.find("or pass --db FILE") != std::string::npos);
}
