// The runtime directory vgpud serves its sockets from: made safely, and one
// already there is used only if nobody else could have placed or swapped
// files in it (the default /tmp/vgpu-$UID is a name anyone can take first).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

#include "runtime_dir.h"
#include "vgpu/transport/unix_socket.h"

namespace fs = std::filesystem;
using vgpu::cli::prepare_runtime_dir;
using Code = vgpu::Result::Code;

namespace {

struct Scratch {
  std::string path;
  Scratch() {
    char tmpl[] = "/tmp/vgpu-runtime-test-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~Scratch() { fs::remove_all(path); }
};

mode_t mode_of(const std::string& p) {
  struct stat st{};
  REQUIRE(lstat(p.c_str(), &st) == 0);
  return st.st_mode;
}

}  // namespace

TEST_CASE("a new runtime directory is made with its parents, closed to others unless root") {
  Scratch s;
  const std::string dir = s.path + "/a/b/vgpu";
  REQUIRE(prepare_runtime_dir(dir).ok());
  CHECK(S_ISDIR(mode_of(dir)));
  CHECK((mode_of(dir) & 07777) == (geteuid() == 0 ? 0755u : 0700u));
  CHECK(prepare_runtime_dir(dir).ok());  // and used again as it is
}

TEST_CASE("a runtime directory that is a symbolic link is refused") {
  Scratch s;
  const std::string target = s.path + "/elsewhere", link = s.path + "/vgpu";
  fs::create_directory(target);
  fs::create_directory_symlink(target, link);
  const vgpu::Result r = prepare_runtime_dir(link);
  CHECK(r.is(Code::kInvalidArgument));
  CHECK_THAT(r.message(), Catch::Contains("symbolic link"));
}

TEST_CASE("a runtime directory anyone may write in, or that is a file, is refused") {
  Scratch s;
  const std::string open_dir = s.path + "/open";
  fs::create_directory(open_dir);
  REQUIRE(chmod(open_dir.c_str(), 0777) == 0);
  const vgpu::Result open = prepare_runtime_dir(open_dir);
  CHECK(open.is(Code::kPermissionDenied));
  CHECK_THAT(open.message(), Catch::Contains("writable by everyone"));
  const std::string file = s.path + "/file";
  FILE* f = fopen(file.c_str(), "w");
  REQUIRE(f);
  fclose(f);
  const vgpu::Result not_dir = prepare_runtime_dir(file);
  CHECK(not_dir.is(Code::kInvalidArgument));
  CHECK_THAT(not_dir.message(), Catch::Contains("not a directory"));
}

TEST_CASE("a runtime directory someone else made first is refused") {
  // Needs a second uid to own it: the test runs as root in CI (as everywhere
  // `scripts/test.sh` runs); as another user it checks root's ownership is
  // accepted instead, the one other owner a user can meet.
  Scratch s;
  const std::string dir = s.path + "/vgpu";
  fs::create_directory(dir);
  if (geteuid() == 0) {
    REQUIRE(chown(dir.c_str(), 65534, 65534) == 0);  // nobody
    const vgpu::Result r = prepare_runtime_dir(dir);
    CHECK(r.is(Code::kPermissionDenied));
    CHECK_THAT(r.message(), Catch::Contains("belongs to uid 65534"));
  } else {
    CHECK(prepare_runtime_dir(dir).ok());
  }
}

TEST_CASE("a socket's mode is set on the socket, never through a link swapped in for it") {
  Scratch s;
  const std::string victim = s.path + "/victim", link = s.path + "/vgpud.sock";
  FILE* f = fopen(victim.c_str(), "w");
  REQUIRE(f);
  fclose(f);
  REQUIRE(chmod(victim.c_str(), 0600) == 0);
  fs::create_symlink(victim, link);
  CHECK_FALSE(vgpu::transport::set_mode_no_follow(link, 0666));
  CHECK((mode_of(victim) & 07777) == 0600u);  // what the link pointed to kept its mode
  CHECK(vgpu::transport::set_mode_no_follow(victim, 0640));
  CHECK((mode_of(victim) & 07777) == 0640u);
}
