// The domain watcher on the test driver: lifecycle events by UUID with the
// stop reason and the state at handling time; and the connection: failures
// reported with backoff, a closed connection reopened, the domains reported
// again after each (re)connection.
#include <atomic>
#include <mutex>

#include <catch2/catch.hpp>

#include "domain_watcher.h"
#include "test_driver.h"

using namespace vgpu;
using namespace vgpu::virt;
using namespace vgpu::virt::test;
using namespace std::chrono_literals;

namespace {

struct Recorder : DomainEvents {
  std::mutex mu;
  std::vector<DomainEvent> events;
  std::vector<std::string> log;  // connected N / unreachable WHY / lost WHY
  std::vector<std::chrono::milliseconds> delays;
  void connected(const std::vector<DomainInfo>& domains) override {
    std::lock_guard lock(mu);
    log.push_back("connected " + std::to_string(domains.size()));
  }
  void unreachable(const std::string& why, int failures, std::chrono::milliseconds retry) override {
    std::lock_guard lock(mu);
    log.push_back("unreachable " + std::to_string(failures) + " " + why);
    delays.push_back(retry);
  }
  void lost(const std::string& why) override {
    std::lock_guard lock(mu);
    log.push_back("lost " + why);
  }
  void event(const DomainEvent& e) override {
    std::lock_guard lock(mu);
    events.push_back(e);
  }
  // The events about domain `uuid`, as "kind/reason/state".
  std::vector<std::string> about(const std::string& uuid) {
    std::lock_guard lock(mu);
    std::vector<std::string> out;
    for (const auto& e : events) {
      if (e.uuid != uuid) continue;
      static const char* kinds[] = {"defined", "undefined", "started", "stopped", "other"};
      out.push_back(std::string(kinds[static_cast<int>(e.kind)]) + "/" + e.reason + "/" +
                    std::string(state_name(e.state_now)));
    }
    return out;
  }
  size_t count(const std::string& prefix) {
    std::lock_guard lock(mu);
    size_t n = 0;
    for (const auto& l : log) n += l.rfind(prefix, 0) == 0;
    return n;
  }
};

WatcherOptions fast(std::function<virConnectPtr(const std::string&, std::string*)> open = {}) {
  WatcherOptions o;
  o.uri = kTestUri;
  o.backoff = {20ms, 80ms, 2.0};
  o.open = std::move(open);
  return o;
}

}  // namespace

TEST_CASE("lifecycle events arrive by UUID, with the reason and the state now") {
  TestConnection tc;
  Recorder r;
  DomainWatcher w(fast(), &r);
  w.start();
  REQUIRE(eventually([&] { return w.connected(); }));
  const std::string uuid = "20000000-0000-4000-8000-00000000000a";
  // One step at a time, so that the state at handling time is the step's.
  auto step = [&](size_t n) { REQUIRE(eventually([&] { return r.about(uuid).size() == n; })); };
  {
    TestDomain d(tc.get(), "watch-a", uuid);
    step(1);
    REQUIRE(d.start());
    step(2);
    REQUIRE(d.destroy());
    step(3);
    REQUIRE(d.start());
    step(4);
    REQUIRE(d.shutdown());
    step(5);
  }  // undefined
  step(6);
  const auto seen = r.about(uuid);
  CHECK(seen[0] == "defined//shut off");
  CHECK(seen[1] == "started//running");
  CHECK(seen[2] == "stopped/destroyed/shut off");
  CHECK(seen[3] == "started//running");
  CHECK(seen[4] == "stopped/shutdown/shut off");
  CHECK(seen[5] == "undefined//no state");  // gone
  w.stop();
}

TEST_CASE("a libvirt that cannot be reached is retried with backoff until it can") {
  std::atomic<int> refusals{3};
  Recorder r;
  DomainWatcher w(fast([&](const std::string& uri, std::string* why) -> virConnectPtr {
                    if (refusals-- > 0) {
                      *why = "injected: libvirtd is not running";
                      return nullptr;
                    }
                    return virConnectOpen(uri.c_str());
                  }),
                  &r);
  const auto t0 = std::chrono::steady_clock::now();
  w.start();
  REQUIRE(eventually([&] { return w.connected(); }));
  CHECK(std::chrono::steady_clock::now() - t0 >= 20ms + 40ms + 80ms);
  CHECK(w.attempts() == 4);
  // connected() holds before the watcher reports the connection.
  REQUIRE(eventually([&] {
    std::lock_guard lock(r.mu);
    return r.log.size() == 4;
  }));
  std::lock_guard lock(r.mu);
  CHECK(r.log[0] == "unreachable 1 injected: libvirtd is not running");
  CHECK(r.log[2].rfind("unreachable 3 ", 0) == 0);
  CHECK(r.log[3].rfind("connected ", 0) == 0);
  CHECK(r.delays == std::vector<std::chrono::milliseconds>{20ms, 40ms, 80ms});
}

TEST_CASE("a closed connection is reopened and the domains reported again") {
  TestConnection tc;
  std::atomic<bool> down{false};
  Recorder r;
  DomainWatcher w(fast([&](const std::string& uri, std::string* why) -> virConnectPtr {
                    if (down) {
                      *why = "injected: libvirtd is restarting";
                      return nullptr;
                    }
                    return virConnectOpen(uri.c_str());
                  }),
                  &r);
  w.start();
  REQUIRE(eventually([&] { return r.count("connected") == 1; }));
  down = true;
  w.inject_close("libvirtd closed the connection");
  REQUIRE(eventually([&] { return r.count("unreachable") >= 2; }));
  CHECK_FALSE(w.connected());
  CHECK(r.count("lost libvirtd closed the connection") == 1);
  // Events while disconnected are not seen...
  TestDomain d(tc.get(), "watch-b", "20000000-0000-4000-8000-00000000000b");
  REQUIRE(d.start());
  down = false;
  REQUIRE(eventually([&] { return r.count("connected") == 2; }));
  // ...but the new connection's are.
  REQUIRE(d.destroy());
  REQUIRE(eventually([&] { return !r.about(d.uuid()).empty(); }));
  CHECK(r.about(d.uuid()).back().rfind("stopped/destroyed/", 0) == 0);
  w.stop();
  CHECK_FALSE(w.connected());
}

TEST_CASE("stopping a watcher that never connected does not wait for the backoff") {
  Recorder r;
  WatcherOptions o = fast([](const std::string&, std::string* why) -> virConnectPtr {
    *why = "injected";
    return nullptr;
  });
  o.backoff = {10s, 10s, 1.0};
  DomainWatcher w(o, &r);
  w.start();
  REQUIRE(eventually([&] { return r.count("unreachable") == 1; }));
  const auto t0 = std::chrono::steady_clock::now();
  w.stop();
  CHECK(std::chrono::steady_clock::now() - t0 < 2s);
}
