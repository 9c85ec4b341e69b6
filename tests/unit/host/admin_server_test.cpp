// The admin socket's limits: any local user may connect, so no user may take
// it from the others (connections per uid, places kept for root, idle ones
// closed), and no request may end the server.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "vgpu/host/admin_server.h"

using vgpu::host::AdminServer;
using namespace std::chrono_literals;

namespace {

struct Server {
  std::string dir;
  std::unique_ptr<AdminServer> server;

  explicit Server(AdminServer::Limits limits) {
    char tmpl[] = "/tmp/vgpu-admin-test-XXXXXX";
    dir = mkdtemp(tmpl);
    server = std::make_unique<AdminServer>(
        dir + "/admin.sock",
        [](uint32_t, const std::string& line) -> std::string {
          if (line == "throw") throw std::runtime_error("a handler bug");
          return "echo " + line;
        },
        std::move(limits));
    const vgpu::Result started = server->start();
    INFO(started.text());
    REQUIRE(started.ok());
  }
  ~Server() {
    server->stop();
    std::filesystem::remove_all(dir);
  }
};

// One connection; the server's first words are read with a bound so a
// refusal (sent at once) and an accepted connection (silent) tell apart.
class Peer {
 public:
  explicit Peer(const std::string& path) {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    REQUIRE(connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    const timeval limit{30, 0};  // only a failing test waits this long
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  }
  ~Peer() { close(fd_); }
  std::string ask(const std::string& line) {
    const std::string out = line + "\n";
    if (send(fd_, out.data(), out.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(out.size())) return "";
    return read_line();
  }
  void send_raw(const std::string& bytes) { send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL); }
  // The next line from the server, "" when it closed the connection.
  std::string read_line() {
    std::string s;
    char ch = 0;
    while (recv(fd_, &ch, 1, 0) == 1) {
      if (ch == '\n') return s;
      s.push_back(ch);
    }
    return s;
  }

 private:
  int fd_ = -1;
};

AdminServer::Limits limits(size_t per_uid, size_t total, size_t reserved,
                           std::vector<uint32_t> privileged) {
  AdminServer::Limits l;
  l.max_per_uid = per_uid;
  l.max_clients = total;
  l.reserved_for_privileged = reserved;
  l.privileged = std::move(privileged);
  return l;
}

}  // namespace

TEST_CASE("admin socket: one uid holds at most its share of connections") {
  Server s(limits(2, 32, 0, {}));  // this test's uid is not privileged here
  Peer a(s.dir + "/admin.sock"), b(s.dir + "/admin.sock");
  CHECK(a.ask("x") == "echo x");
  CHECK(b.ask("y") == "echo y");
  {
    Peer c(s.dir + "/admin.sock");
    const std::string refused = c.read_line();
    CHECK_THAT(refused, Catch::Contains("too many admin connections from uid"));
    CHECK(c.read_line().empty());  // and closed
  }
  CHECK(a.ask("still") == "echo still");  // the others are untouched
}

TEST_CASE("admin socket: places are kept for the privileged uids") {
  SECTION("an ordinary uid cannot take the last places") {
    Server s(limits(10, 3, 1, {}));
    Peer a(s.dir + "/admin.sock"), b(s.dir + "/admin.sock");
    CHECK(a.ask("1") == "echo 1");
    CHECK(b.ask("2") == "echo 2");
    Peer c(s.dir + "/admin.sock");
    CHECK_THAT(c.read_line(), Catch::Contains("kept for root"));
  }
  SECTION("a privileged uid may") {
    Server s(limits(1, 3, 1, {getuid()}));
    Peer a(s.dir + "/admin.sock"), b(s.dir + "/admin.sock"), c(s.dir + "/admin.sock");
    CHECK(a.ask("1") == "echo 1");
    CHECK(b.ask("2") == "echo 2");
    CHECK(c.ask("3") == "echo 3");  // no per-uid limit either
  }
}

TEST_CASE("admin socket: a connection that sends no complete request is closed") {
  AdminServer::Limits l = limits(4, 32, 0, {});
  l.idle_timeout = 200ms;
  Server s(l);
  Peer idle(s.dir + "/admin.sock"), dribbler(s.dir + "/admin.sock");
  CHECK(dribbler.ask("first") == "echo first");  // a request resets its clock
  dribbler.send_raw("half a line, never finished");  // counts as nothing sent
  CHECK_THAT(idle.read_line(), Catch::Contains("no request for too long"));
  CHECK(idle.read_line().empty());
  CHECK_THAT(dribbler.read_line(), Catch::Contains("no request for too long"));
}

TEST_CASE("admin socket: a handler that throws costs the peer an error answer, nothing more") {
  Server s(limits(4, 32, 0, {}));
  Peer p(s.dir + "/admin.sock");
  CHECK_THAT(p.ask("throw"), Catch::Contains("could not handle that request"));
  CHECK(p.ask("after") == "echo after");
}
