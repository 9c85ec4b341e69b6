// The libvirt connection on the test driver: domains by name and by UUID,
// the vgpu device added to and removed from the persistent definition (the
// test driver lacks AttachDeviceFlags: the edited definition is defined
// again), errors as one line.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "backoff.h"
#include "qemu_peer.h"
#include "shmem_xml.h"
#include "test_driver.h"
#include "virt_connection.h"

using namespace vgpu;
using namespace vgpu::virt;
using namespace vgpu::virt::test;
using namespace std::chrono_literals;

TEST_CASE("domains are found by name and by UUID; an unknown one is one line") {
  TestConnection tc;
  TestDomain dom(tc.get(), "conn-a", "10000000-0000-4000-8000-00000000000a");
  REQUIRE(dom.defined());
  std::unique_ptr<Connection> conn;
  REQUIRE(Connection::open(kTestUri, &conn).ok());
  REQUIRE(conn);
  Domain d;
  REQUIRE(conn->find("conn-a", &d).ok());
  CHECK(d.info().uuid == dom.uuid());
  CHECK(d.info().state == DomainState::kShutoff);
  CHECK(d.info().persistent);
  REQUIRE(conn->find(dom.uuid(), &d).ok());
  CHECK(d.info().name == "conn-a");
  const vgpu::Result nope = conn->find("nope", &d);
  CHECK(nope.is(vgpu::Result::Code::kNotFound));
  CHECK(nope.message() == "unknown domain 'nope' on test:///default");
  CHECK(conn->find("10000000-0000-4000-8000-0000000000ff", &d).is(vgpu::Result::Code::kNotFound));
  std::vector<DomainInfo> all;
  REQUIRE(conn->list(&all).ok());
  bool seen = false;
  for (const auto& i : all) seen = seen || i.name == "conn-a";
  CHECK(seen);
}

TEST_CASE("the vgpu device goes into the persistent definition and out again, exactly") {
  TestConnection tc;
  TestDomain dom(tc.get(), "conn-b", "10000000-0000-4000-8000-00000000000b",
                 "<shmem name='keep-me'><model type='ivshmem-plain'/><size unit='M'>4</size></shmem>");
  REQUIRE(dom.defined());
  std::unique_ptr<Connection> conn;
  REQUIRE(Connection::open(kTestUri, &conn).ok());
  Domain d;
  REQUIRE(conn->find("conn-b", &d).ok());
  const std::string before = dom.persistent_xml();

  REQUIRE(conn->add_device(d, device_xml("conn-b", "/run/vgpu/vms/conn-b.sock")).ok());
  DomainXml parsed;
  REQUIRE(parse_domain_xml(dom.persistent_xml(), &parsed).ok());
  REQUIRE(parsed.devices.size() == 1);
  CHECK(parsed.devices[0].name == "vgpu-conn-b");
  CHECK(parsed.devices[0].model == "ivshmem-doorbell");
  CHECK(parsed.devices[0].server_path == "/run/vgpu/vms/conn-b.sock");
  CHECK(parsed.devices[0].vectors == 1);
  CHECK(parsed.uuid == dom.uuid());  // the same domain, redefined

  REQUIRE(conn->remove_device(d, "vgpu-conn-b").ok());
  CHECK(dom.persistent_xml() == before);  // the other shmem device is still there
  // Removing it again changes nothing.
  REQUIRE(conn->remove_device(d, "vgpu-conn-b").ok());
  CHECK(dom.persistent_xml() == before);
}

TEST_CASE("an unreachable libvirt is one line saying where") {
  std::unique_ptr<Connection> conn;
  const vgpu::Result r =
      Connection::open("qemu:///session?socket=/nonexistent/libvirt-sock", &conn);
  CHECK(r.is(vgpu::Result::Code::kUnavailable));
  CHECK_FALSE(conn);
  CHECK_THAT(r.message(),
             Catch::StartsWith("cannot reach libvirt at qemu:///session?socket=/nonexistent"));
  CHECK(r.message().find('\n') == std::string::npos);
}

TEST_CASE("reconnection backs off: doubling from the first delay to the most") {
  Backoff b({100ms, 1000ms, 2.0});
  CHECK(b.next() == 100ms);
  CHECK(b.next() == 200ms);
  CHECK(b.next() == 400ms);
  CHECK(b.next() == 800ms);
  CHECK(b.next() == 1000ms);
  CHECK(b.next() == 1000ms);
  b.reset();
  CHECK(b.next() == 100ms);
  Backoff flat({50ms, 50ms, 0.5});  // a factor below 1 does not shrink it
  CHECK(flat.next() == 50ms);
  CHECK(flat.next() == 50ms);
}

TEST_CASE("the domain a QEMU process runs comes from its -uuid") {
  // A process whose command line carries -uuid as QEMU's does (sh waits on read).
  int pipefd[2];
  REQUIRE(pipe(pipefd) == 0);
  const pid_t child = fork();
  if (child == 0) {
    dup2(pipefd[0], 0);
    close(pipefd[0]);
    close(pipefd[1]);  // else `read` never sees the end of its input
    execl("/bin/sh", "sh", "-c", "read x", "-uuid", "6695EB01-F6A4-8304-79AA-97F2502E193F",
          nullptr);
    _exit(127);
  }
  close(pipefd[0]);
  std::string uuid;
  CHECK(eventually([&] {
    uuid = qemu_domain_uuid(child);
    return !uuid.empty();
  }));
  CHECK(uuid == "6695eb01-f6a4-8304-79aa-97f2502e193f");
  close(pipefd[1]);
  waitpid(child, nullptr, 0);
  CHECK(qemu_domain_uuid(getpid()).empty());  // not a QEMU
  CHECK(qemu_domain_uuid(child).empty());     // gone
}
