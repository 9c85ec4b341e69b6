// vgpud's libvirt control on the test driver, with a real policy store and
// the daemon's hooks faked: attached VMs served from the start, a domain's
// run recorded as a session, its stop releasing the VM, what was missed while
// libvirt was unreachable reconciled, a reused name and a foreign QEMU turned
// away, running domains a previous vgpud served replugged.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <mutex>
#include <set>

#include <catch2/catch.hpp>

#include <sqlite3.h>

#include "qemu_peer.h"
#include "test_driver.h"
#include "vgpu/host/libvirt_control.h"

using namespace vgpu;
using namespace vgpu::host;
using namespace vgpu::virt;
using namespace vgpu::virt::test;
using namespace std::chrono_literals;

namespace {

constexpr const char* kUuidA = "30000000-0000-4000-8000-00000000000a";

policy::Actor root() { return {0, "root", policy::Role::kAdmin, 0}; }

struct FakeDaemon {
  std::mutex mu;
  std::set<std::string> served;
  std::vector<std::string> unserved;
  std::vector<std::pair<std::string, int>> released;
  std::atomic<uint64_t> gpu{0};
  VmHooks hooks() {
    VmHooks h;
    h.serve = [this](const std::string& vm) {
      std::lock_guard lock(mu);
      served.insert(vm);
      return Result();
    };
    h.unserve = [this](const std::string& vm) {
      std::lock_guard lock(mu);
      served.erase(vm);
      unserved.push_back(vm);
    };
    h.release = [this](const std::string& vm, int pid) {
      std::lock_guard lock(mu);
      released.emplace_back(vm, pid);
    };
    h.socket_path = [](const std::string& vm) { return "/run/test/vms/" + vm + ".sock"; };
    h.gpu_ns = [this](policy::TenantId) { return gpu.load(); };
    return h;
  }
  bool serves(const std::string& vm) {
    std::lock_guard lock(mu);
    return served.count(vm) != 0;
  }
  size_t releases() {
    std::lock_guard lock(mu);
    return released.size();
  }
};

struct Fixture {
  std::string db = "/tmp/vgpu-libvirt-control-" + std::to_string(getpid()) + "-" +
                   std::to_string(reinterpret_cast<uintptr_t>(this)) + ".db";
  std::unique_ptr<policy::Store> store;
  TestConnection tc;
  FakeDaemon fake;
  std::atomic<bool> libvirt_down{false};
  std::unique_ptr<LibvirtControl> control;

  Fixture() {
    REQUIRE(policy::open_sqlite_store(db, &store).ok());
    REQUIRE(store->create_course(root(), "cs101", "").ok());
    REQUIRE(store->add_student(root(), "alice", "cs101", {}).ok());
  }
  ~Fixture() {
    control.reset();
    store.reset();
    for (const char* s : {"", "-wal", "-shm"}) std::filesystem::remove(db + s);
  }
  void attach(const std::string& vm, const std::string& uuid) {
    REQUIRE(store->attach_domain(root(), vm, uuid, "alice", false).ok());
  }
  void start() {
    WatcherOptions o;
    o.backoff = {20ms, 40ms, 2.0};
    o.open = [this](const std::string& uri, std::string* w) -> virConnectPtr {
      if (libvirt_down) {
        *w = "injected: libvirtd is restarting";
        return nullptr;
      }
      return virConnectOpen(uri.c_str());
    };
    control = std::make_unique<LibvirtControl>(store.get(), fake.hooks(), kTestUri, o);
    control->start();
    REQUIRE(eventually([&] { return control->connected(); }));
  }
  std::vector<policy::VmSession> sessions(const std::string& vm) {
    std::vector<policy::VmSession> out;
    REQUIRE(store->list_sessions(vm, 0, &out).ok());
    return out;
  }
  bool session_ended(const std::string& vm, size_t n) {
    auto s = sessions(vm);
    return s.size() >= n && s[n - 1].ended_at != 0;
  }
};

}  // namespace

TEST_CASE("an attached domain's runs are sessions; its stop releases the VM") {
  Fixture f;
  TestDomain dom(f.tc.get(), "ctl-a", kUuidA);
  f.attach("ctl-a", kUuidA);
  f.start();
  CHECK(f.fake.serves("ctl-a"));  // before the domain ever starts

  REQUIRE(dom.start());
  REQUIRE(eventually([&] { return f.sessions("ctl-a").size() == 1; }));
  std::string why;
  CHECK(f.control->admit("ctl-a", 4242, &why));  // QEMU connects (no -uuid: allowed)
  f.fake.gpu += 5000;
  REQUIRE(dom.destroy());
  REQUIRE(eventually([&] { return f.session_ended("ctl-a", 1); }));
  auto s = f.sessions("ctl-a");
  CHECK(s[0].end_reason == "destroyed");
  CHECK(s[0].gpu_ns == 5000);
  CHECK(s[0].uuid == kUuidA);
  {
    std::lock_guard lock(f.fake.mu);
    REQUIRE(f.fake.released.size() == 1);
    CHECK(f.fake.released[0] == std::make_pair(std::string("ctl-a"), 4242));
  }
  CHECK(f.fake.serves("ctl-a"));  // for the next start

  REQUIRE(dom.start());
  REQUIRE(eventually([&] { return f.sessions("ctl-a").size() == 2; }));
  REQUIRE(dom.shutdown());
  REQUIRE(eventually([&] { return f.session_ended("ctl-a", 2); }));
  CHECK(f.sessions("ctl-a")[1].end_reason == "shutdown");
  CHECK(f.sessions("ctl-a")[1].gpu_ns == 0);
}

TEST_CASE("sessions across vgpud restarts: left open ones end, running domains begin one") {
  Fixture f;
  TestDomain dom(f.tc.get(), "ctl-b", "30000000-0000-4000-8000-00000000000b");
  f.attach("ctl-b", dom.uuid());
  std::vector<policy::DomainAttachment> attached;
  REQUIRE(f.store->list_attachments(&attached).ok());
  int64_t stale = 0;  // a session a killed vgpud left open
  REQUIRE(
      f.store->begin_session(attached[0].tenant, dom.uuid(), attached[0].student_id, 100, &stale)
          .ok());
  REQUIRE(dom.start());  // running before vgpud watches
  f.start();
  REQUIRE(eventually([&] { return f.sessions("ctl-b").size() == 2; }));
  auto s = f.sessions("ctl-b");
  CHECK(s[0].end_reason == "vgpud restarted");
  CHECK(s[1].ended_at == 0);
  f.control->stop();
  s = f.sessions("ctl-b");
  CHECK(s[1].end_reason == "vgpud stopped");
}

TEST_CASE("a stop missed while libvirt was unreachable is found on reconnecting") {
  Fixture f;
  TestDomain dom(f.tc.get(), "ctl-c", "30000000-0000-4000-8000-00000000000c");
  f.attach("ctl-c", dom.uuid());
  f.start();
  REQUIRE(dom.start());
  REQUIRE(eventually([&] { return f.sessions("ctl-c").size() == 1; }));
  f.libvirt_down = true;
  f.control->watcher()->inject_close("injected: libvirtd stopped");
  REQUIRE(eventually([&] { return !f.control->connected(); }));
  REQUIRE(dom.destroy());  // nobody is watching
  // The watcher tries again (and fails) after the stop: still nothing ended.
  const int tried = f.control->watcher()->attempts();
  REQUIRE(eventually([&] { return f.control->watcher()->attempts() > tried; }));
  f.control->drain_sessions();
  CHECK(f.sessions("ctl-c")[0].ended_at == 0);
  f.libvirt_down = false;
  REQUIRE(eventually([&] { return f.session_ended("ctl-c", 1); }));
  CHECK(f.sessions("ctl-c")[0].end_reason == "stopped while libvirt was unreachable");
  CHECK(f.fake.releases() == 1);
}

// A process whose command line says `-uuid UUID`, as a QEMU libvirt started.
class FakeQemu {
 public:
  explicit FakeQemu(const std::string& uuid) {
    REQUIRE(pipe(pipefd_) == 0);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(pipefd_[0], 0);
      close(pipefd_[0]);
      close(pipefd_[1]);  // else `read` never sees the end of its input
      execl("/bin/sh", "sh", "-c", "read x", "-uuid", uuid.c_str(), nullptr);
      _exit(127);
    }
    close(pipefd_[0]);
  }
  ~FakeQemu() {
    close(pipefd_[1]);
    waitpid(pid_, nullptr, 0);
  }
  int pid() const { return pid_; }

 private:
  int pipefd_[2] = {-1, -1};
  pid_t pid_ = -1;
};

TEST_CASE("another program's write lock holds up neither a QEMU connecting nor the others") {
  Fixture f;
  TestDomain dom(f.tc.get(), "ctl-w", "30000000-0000-4000-8000-0000000000f1");
  f.attach("ctl-w", dom.uuid());
  f.start();
  // A sqlite3 shell in a transaction, say: every write waits for it.
  sqlite3* other = nullptr;
  REQUIRE(sqlite3_open(f.db.c_str(), &other) == SQLITE_OK);
  REQUIRE(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK);
  // The device plugged into the running domain: its QEMU connects, and the
  // session begins then (no start event comes). admit runs on the transport
  // thread every VM's calls go through: it must not wait out the lock (5 s).
  const auto t0 = std::chrono::steady_clock::now();
  std::string why;
  CHECK(f.control->admit("ctl-w", 4243, &why));
  CHECK(f.control->admit("ctl-w", 4243, &why));  // and mu_ is free meanwhile
  CHECK(std::chrono::steady_clock::now() - t0 < 500ms);
  std::this_thread::sleep_for(300ms);
  // The write waits for the lock (read on the lock holder's connection: the
  // fixture's is the one the control writes with, and waits with it).
  sqlite3_stmt* count = nullptr;
  REQUIRE(sqlite3_prepare_v2(other, "SELECT count(*) FROM vm_sessions", -1, &count, nullptr) ==
          SQLITE_OK);
  REQUIRE(sqlite3_step(count) == SQLITE_ROW);
  CHECK(sqlite3_column_int(count, 0) == 0);
  sqlite3_finalize(count);
  REQUIRE(sqlite3_exec(other, "COMMIT", nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(other);
  REQUIRE(eventually([&] { return f.sessions("ctl-w").size() == 1; }));
  f.control->drain_sessions();  // both connections' writes are done
  CHECK(f.sessions("ctl-w").size() == 1);  // one session for the two connections
}

TEST_CASE("running domains a previous vgpud served get their device plugged in again") {
  Fixture f;
  const std::string device = "<shmem name='vgpu-ctl-r1'><model type='ivshmem-doorbell'/>"
                             "<server path='/run/test/vms/ctl-r1.sock'/><msi vectors='1'/></shmem>";
  TestDomain lost(f.tc.get(), "ctl-r1", "30000000-0000-4000-8000-0000000000e1", device);
  TestDomain bare(f.tc.get(), "ctl-r2", "30000000-0000-4000-8000-0000000000e2");
  TestDomain off(f.tc.get(), "ctl-r3", "30000000-0000-4000-8000-0000000000e3", device);
  f.attach("ctl-r1", lost.uuid());
  f.attach("ctl-r2", bare.uuid());
  f.attach("ctl-r3", off.uuid());
  REQUIRE(lost.start());  // running before this vgpud: its QEMU connected to another
  REQUIRE(bare.start());
  f.start();
  REQUIRE(eventually([&] { return f.control->replug()->outcomes().size() == 2; }));
  auto out = f.control->replug()->outcomes();
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.vm < b.vm; });
  // The test driver cannot hot-plug: the attempt is what this test sees
  // (tests/libvirt_e2e replugs a real guest's device).
  CHECK_FALSE(out[0].replugged);
  CHECK_THAT(out[0].what, Catch::Contains("cannot unplug the vgpu device from the running domain"));
  CHECK_FALSE(out[1].replugged);  // plugged in where it is missing: tried, and refused here
  CHECK_THAT(out[1].what, Catch::StartsWith("domain ctl-r2 runs without its vgpu device, and "
                                            "cannot plug the vgpu device into the running domain"));

  SECTION("a domain paused when vgpud started is replugged when it resumes") {
    TestDomain paused(f.tc.get(), "ctl-r4", "30000000-0000-4000-8000-0000000000e4", device);
    f.attach("ctl-r4", paused.uuid());
    REQUIRE(paused.start());
    REQUIRE(paused.suspend());
    // A vgpud starting now (the fixture's is replaced by a new one).
    f.control.reset();
    f.start();
    auto for_r4 = [&] {
      std::vector<ReplugOutcome> r4;
      for (const auto& o : f.control->replug()->outcomes())
        if (o.vm == "ctl-r4") r4.push_back(o);
      return r4;
    };
    REQUIRE(eventually([&] { return for_r4().size() == 1; }));
    CHECK(for_r4()[0].what ==
          "domain ctl-r4 is paused: its vgpu device is plugged in again if it resumes");
    REQUIRE(paused.resume());
    REQUIRE(eventually([&] { return for_r4().size() == 2; }));
    // Tried (the test driver refuses hot-plug, and keeps no device live
    // across a pause and resume, so it is a plug rather than an unplug).
    CHECK_FALSE(for_r4()[1].replugged);
    CHECK_THAT(for_r4()[1].what, Catch::Contains("the vgpu device") &&
                                     Catch::Contains("the running domain: this function is not "
                                                     "supported by the connection driver"));
    return;
  }

  // libvirtd restarts while this vgpud serves the domain's QEMU: nothing to
  // replug then.
  FakeQemu qemu(lost.uuid());
  REQUIRE(eventually([&] { return qemu_domain_uuid(qemu.pid()) == lost.uuid(); }));
  std::string why;
  REQUIRE(f.control->admit("ctl-r1", qemu.pid(), &why));
  const int connections = f.control->watcher()->connections();
  f.control->watcher()->inject_close("injected: libvirtd restarted");
  REQUIRE(eventually([&] { return f.control->watcher()->connections() > connections; }));
  f.control->replug()->drain();  // every job the reconnection asked for has ended
  out = f.control->replug()->outcomes();
  REQUIRE(out.size() == 3);  // ctl-r2 again, not ctl-r1
  CHECK(out[2].vm == "ctl-r2");
}

TEST_CASE("a name reused by another domain gets nothing, and its QEMU is turned away") {
  Fixture f;
  // VM ctl-d is attached to a domain that was undefined; a new domain took its name.
  f.attach("ctl-d", "30000000-0000-4000-8000-0000000000d1");
  TestDomain impostor(f.tc.get(), "ctl-d", "30000000-0000-4000-8000-0000000000d2");
  f.start();
  const uint64_t handled = f.control->watcher()->events_handled();
  REQUIRE(impostor.start());
  REQUIRE(impostor.destroy());
  // Both events handled (and whatever they asked of the database written):
  // they began nothing.
  REQUIRE(eventually([&] { return f.control->watcher()->events_handled() >= handled + 2; }));
  f.control->drain_sessions();
  CHECK(f.sessions("ctl-d").empty());
  CHECK(f.fake.releases() == 0);

  FakeQemu qemu(impostor.uuid());  // a process that runs the impostor
  std::string why;
  REQUIRE(eventually([&] { return !f.control->admit("ctl-d", qemu.pid(), &why); }));
  CHECK(why == "QEMU (pid " + std::to_string(qemu.pid()) + ") runs domain " + impostor.uuid() +
                   ", not domain 30000000-0000-4000-8000-0000000000d1 attached as VM ctl-d");
  CHECK(f.control->admit("other-vm", qemu.pid(), &why));  // not attached: not vgpu's business
}

TEST_CASE("attach and detach requests serve and unserve the VM's socket") {
  Fixture f;
  f.start();
  nlohmann::json answer = {{"ok", true}, {"result", nlohmann::json::object()}};
  nlohmann::json request = {{"op", "vm.attach"}, {"vm", "ctl-e"}, {"uuid", kUuidA},
                            {"student", "alice"}, {"dry_run", true}};
  f.control->after_request(request, &answer);
  CHECK(answer["result"]["socket"] == "/run/test/vms/ctl-e.sock");
  CHECK_FALSE(f.fake.serves("ctl-e"));  // a dry run serves nothing
  request.erase("dry_run");
  f.control->after_request(request, &answer);
  CHECK(f.fake.serves("ctl-e"));
  nlohmann::json refused = {{"ok", false}, {"error", "unknown student"}};
  f.control->after_request({{"op", "vm.detach"}, {"vm", "ctl-e"}}, &refused);
  CHECK(f.fake.serves("ctl-e"));  // a refused request changes nothing
  f.control->after_request({{"op", "vm.detach"}, {"vm", "ctl-e"}}, &answer);
  CHECK_FALSE(f.fake.serves("ctl-e"));
}
