// The host's session layer over a fake transport loop: a real sim backend
// (its worker process), a real dispatcher, the quota control and a SQLite
// store in a temporary folder. The test thread plays the loop thread: it
// calls the ChannelEvents, and runs on_wake whenever the layer wakes the loop.
#pragma once

#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "vgpu/executor/sim_backend.h"
#include "vgpu/host/quota_control.h"
#include "vgpu/host/sessions.h"
#include "vgpu/host/usage_flusher.h"
#include "vgpu/policy/store.h"
#include "vgpu/protocol/codec.h"
#include "vgpu/scheduler/policy_factory.h"

namespace vgpu::host::test {

inline constexpr uint32_t kAliceUid = 4242;    // a student's login
inline constexpr uint32_t kTeacherUid = 5151;  // cs101's teacher
inline constexpr int64_t kHour = 1767225600;  // 2026-01-01 00:00 UTC

struct Reply {
  uint64_t channel = 0;
  vgpu_msg_header header{};
  std::vector<uint8_t> payload;
  Status status() const { return static_cast<Status>(header.status); }
  template <class T>
  T as() const {
    T out{};
    REQUIRE(payload.size() == sizeof out);
    std::memcpy(&out, payload.data(), sizeof out);
    return out;
  }
};

// The loop's side of the session layer: replies are kept; a wake is run by
// the test thread, as the loop thread would.
class FakeLoop final : public transport::LoopPort {
 public:
  void reply(uint64_t channel, std::span<const std::span<const uint8_t>> parts) override {
    Reply r;
    r.channel = channel;
    std::vector<uint8_t> all;
    for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end());
    REQUIRE(all.size() >= sizeof r.header);
    std::memcpy(&r.header, all.data(), sizeof r.header);
    r.payload.assign(all.begin() + sizeof r.header, all.end());
    {
      std::lock_guard lock(mu_);
      replies_.push_back(std::move(r));
    }
    cv_.notify_all();
  }
  void wake() override {
    {
      std::lock_guard lock(mu_);
      woken_ = true;
    }
    cv_.notify_all();
  }
  bool client_data_area(uint64_t, uint32_t client, std::span<uint8_t>* area) const override {
    if (client != 0) return false;  // a simulated VM is one process
    *area = std::span<uint8_t>(const_cast<uint8_t*>(data_.data()), data_.size());
    return true;
  }

  // The reply to `request_id` on `channel`, running the layer's wakes
  // meanwhile. Fails the test if none comes within a minute (a bound for a
  // hang, not a timing assumption).
  Reply wait_reply(Sessions& sessions, uint64_t channel, uint64_t request_id) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    std::unique_lock lock(mu_);
    for (;;) {
      for (auto it = replies_.begin(); it != replies_.end(); ++it) {
        if (it->channel == channel && it->header.request_id == request_id) {
          Reply r = std::move(*it);
          replies_.erase(it);
          return r;
        }
      }
      if (woken_) {
        woken_ = false;
        lock.unlock();
        sessions.on_wake();
        lock.lock();
        continue;
      }
      REQUIRE(cv_.wait_until(lock, deadline) != std::cv_status::timeout);
    }
  }
  // Runs the layer's wakes until `done()` holds (checked after each).
  template <class Pred>
  void run_wakes_until(Sessions& sessions, Pred done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    std::unique_lock lock(mu_);
    for (;;) {
      lock.unlock();
      if (done()) return;
      lock.lock();
      REQUIRE(cv_.wait_until(lock, deadline, [this] { return woken_; }));
      woken_ = false;
      lock.unlock();
      sessions.on_wake();
      lock.lock();
    }
  }
  // Whether a reply to `request_id` has been sent (not waiting for one).
  bool replied(uint64_t channel, uint64_t request_id) {
    std::lock_guard lock(mu_);
    for (const Reply& r : replies_) {
      if (r.channel == channel && r.header.request_id == request_id) return true;
    }
    return false;
  }

 private:
  std::vector<uint8_t> data_ = std::vector<uint8_t>(1 << 20);
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Reply> replies_;
  bool woken_ = false;
};

// A temporary folder (the database, the admin socket), removed afterwards.
struct TempFolder {
  std::string path;
  TempFolder() {
    char tmpl[] = "/tmp/vgpu-host-test-XXXXXX";
    REQUIRE(mkdtemp(tmpl));
    path = tmpl;
  }
  ~TempFolder() { std::filesystem::remove_all(path); }
};

inline policy::Actor root() { return policy::Actor{0, "root", policy::Role::kAdmin, 0}; }

struct World {
  TempFolder dir;
  std::unique_ptr<policy::Store> store = open();
  std::unique_ptr<policy::Store> admin_store = open();
  std::unique_ptr<policy::Store> ledger = open();
  std::unique_ptr<executor::Backend> backend = make_backend();
  QuotaControl quotas{store.get(), admin_store.get(), static_cast<uint32_t>(geteuid())};
  scheduler::SteadyClock clock;
  std::unique_ptr<Sessions> sessions;  // before the dispatcher is made: its completions go here
  std::unique_ptr<scheduler::Dispatcher> dispatcher = make_dispatcher();
  scheduler::DispatcherGroup gpus{{dispatcher.get()}, {}};  // one GPU
  int64_t wall = kHour + 600;
  UsageFlusher usage{ledger.get(),           &gpus, backend.get(), &quotas, std::chrono::hours(1),
                     [this] { return wall; }};
  FakeLoop loop;
  uint64_t next_request = 1;

  World() {
    // tina teaches cs101; alice (uid 4242) has VM a1 in it.
    policy::UserRow tina;
    tina.name = "tina";
    tina.uid = kTeacherUid;
    tina.role = policy::Role::kTeacher;
    REQUIRE(store->add_user(root(), tina).ok());
    REQUIRE(store->create_course(root(), "cs101", "tina").ok());
    REQUIRE(store->add_student(root(), "alice", "cs101", {"a1"}).ok());
    REQUIRE(store->set_student_uid(root(), "alice", kAliceUid).ok());
    SessionParts parts;
    parts.backend = backend.get();
    parts.store = store.get();
    parts.ledger_store = ledger.get();
    parts.quotas = &quotas;
    parts.dispatcher = &gpus;
    parts.usage = &usage;
    sessions = std::make_unique<Sessions>(std::move(parts));
    sessions->attach(&loop);
    dispatcher->start();
    REQUIRE(quotas.start(&gpus, backend.get(), dir.path).ok());
  }
  ~World() {
    quotas.stop();
    sessions->stop();
    dispatcher->stop();
    usage.stop();
  }

  std::unique_ptr<policy::Store> open() {
    std::unique_ptr<policy::Store> s;
    REQUIRE(policy::open_sqlite_store(dir.path + "/vgpu.db", &s).ok());
    return s;
  }
  static std::unique_ptr<executor::Backend> make_backend() {
    executor::SimConfig c;
    c.device_memory = 1ull << 30;
    c.worker_path = VGPU_SIM_WORKER;
    std::unique_ptr<executor::Backend> b;
    REQUIRE(executor::make_sim_backend(c, &b) == Status::kSuccess);
    return b;
  }
  std::unique_ptr<scheduler::Dispatcher> make_dispatcher() {
    std::unique_ptr<scheduler::SchedulingPolicy> policy;
    REQUIRE(scheduler::make_policy("fair", {}, &policy).ok());
    return std::make_unique<scheduler::Dispatcher>(
        backend.get(), std::move(policy), &quotas, &clock, scheduler::DispatcherConfig{},
        [this](const scheduler::Command& c, const executor::ExecResult& r) {
          sessions->on_complete(c, r);
        },
        [this] { loop.wake(); });
  }

  // A simulated VM's program (this process) run by `uid` opens `channel` as `vm`.
  Status open_channel(uint64_t channel, const std::string& vm, uint32_t uid,
                      std::string* why = nullptr) {
    transport::PeerCredentials peer;
    peer.pid = getpid();
    peer.uid = uid;
    std::string ignored;
    std::vector<uint8_t>& area = areas.emplace_back(1 << 16);
    return sessions->on_open(channel, vm, peer, area, why ? why : &ignored);
  }
  // Sends one request on `channel` (the loop reads it: on_request, then the
  // burst ends); returns its request id.
  template <class Request>
  uint64_t send(uint64_t channel, const Request& req, uint32_t client = 0) {
    const uint64_t id = next_request++;
    std::vector<uint8_t> message(proto::request_size<proto::OpOf<Request>::value>(0));
    proto::encode_request(message, id, 0, req);
    vgpu_msg_header h;
    std::memcpy(&h, message.data(), sizeof h);
    h.client = client;
    std::memcpy(message.data(), &h, sizeof h);
    REQUIRE(sessions->accepting(channel));
    sessions->on_request(channel, message);
    return id;
  }
  void end_burst(uint64_t channel) {
    sessions->on_burst_end(channel);
    sessions->on_pass_end();
  }
  template <class Request>
  Reply call(uint64_t channel, const Request& req, uint32_t client = 0) {
    const uint64_t id = send(channel, req, client);
    end_burst(channel);
    return loop.wait_reply(*sessions, channel, id);
  }
  scheduler::TenantId tenant_of(const std::string& vm) {
    scheduler::TenantId t = 0;
    REQUIRE(store->find_vm(vm, &t).ok());
    return t;
  }

  std::vector<std::vector<uint8_t>> areas;
};

}  // namespace vgpu::host::test
