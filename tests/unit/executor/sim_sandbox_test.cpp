// The sim worker's sandbox (executor/src/sim/worker_sandbox.h): a plug-in
// kernel that tries what an exploited plug-in bug would (open a file, make a
// socket, create a file, start a process) gets EPERM for each, and runs as
// an unprivileged user when the backend runs as root. The same kernel with
// the sandbox off shows that each attempt would have worked.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include <catch2/catch.hpp>

#include "sim_test_support.h"

using namespace vgpu;
using namespace vgpu::executor;
using namespace vgpu::executor::test;

namespace {

struct Escape {
  long long open_passwd, socket, uid, create_file, fork;
};

Escape try_escape() {
  auto b = make_backend();
  const ContextId ctx = new_context(*b, 1);
  const Handle m = load_fixture(*b, ctx);
  const uint64_t out = alloc(*b, ctx, sizeof(Escape));
  const Handle escape = function(*b, ctx, m, "_Z6escapePx");
  REQUIRE(run(*b, ctx, launch(escape, Params(8).at(0, out).take())).status == Status::kSuccess);
  Escape e{};
  REQUIRE(get(*b, ctx, &e, out, sizeof e) == Status::kSuccess);
  return e;
}

}  // namespace

TEST_CASE("sim: a plug-in kernel cannot open files, make sockets or processes, or stay root") {
  const Escape e = try_escape();
  CHECK(e.open_passwd == -EPERM);
  CHECK(e.socket == -EPERM);
  CHECK(e.create_file == -EPERM);
  CHECK(e.fork == -EPERM);
  CHECK(e.uid != 0);
  if (geteuid() != 0) CHECK(e.uid == static_cast<long long>(getuid()));  // no root to drop
}

TEST_CASE("sim: without the sandbox the same kernel could do each of those") {
  setenv("VGPU_WORKER_SANDBOX", "off", 1);
  const Escape e = try_escape();
  unsetenv("VGPU_WORKER_SANDBOX");
  CHECK(e.open_passwd >= 0);
  CHECK(e.socket >= 0);
  CHECK(e.create_file >= 0);
  CHECK(e.fork > 0);
  CHECK(e.uid == static_cast<long long>(getuid()));
}
