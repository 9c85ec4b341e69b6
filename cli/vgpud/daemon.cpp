#include "daemon.h"

#include <spdlog/spdlog.h>

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <ctime>
#include <deque>

#include "vgpu/protocol/codec.h"
#include "vgpu/protocol/handover.h"
#include "vgpu/protocol/vm_region.h"
#include "metrics.h"
#include "vm_people.h"
#include "policy_status.h"
#include "session_rules.h"
#include "vm_sockets.h"

namespace vgpu::daemon {

using executor::ContextId;
using scheduler::TenantId;

// One guest process on a channel (a simulated VM has exactly one, client 0).
struct Daemon::Session {
  ContextId context = 0;
};

struct Daemon::Channel {
  uint64_t id = 0;
  TenantId tenant = 0;
  std::string vm;
  std::span<uint8_t> data_area;
  std::unordered_map<uint32_t, Session> sessions;  // by client
  int pid = -1;  // a simulated VM's program (SO_PEERCRED); -1 for a real VM (its QEMU)
  bool held = false;  // its queue was full at the last look (back-pressure, counted once)
  // A real VM refused by its quota (unassigned on a host that refuses
  // those): kept, its requests answered cudaErrorDevicesUnavailable, and
  // admitted once a teacher binds it, at the first request after the next
  // look.
  bool admitted = true;
  std::chrono::steady_clock::time_point next_look{};
  // A VM's first connection: its tenant is being written (register_vm), or
  // the write failed and is tried again at the next look.
  bool registering = false;
  // A slow call of the channel (or its session's context being created) runs
  // off the loop thread: its ring is not read, and requests read in the same
  // burst wait behind it, in order, until the answer is sent.
  bool slow_pending = false;
  std::deque<std::vector<uint8_t>> behind;
  // The guest went away meanwhile: the channel closes once the slow call
  // ends, and the data area it may use stays mapped until then.
  bool closing = false;
  std::shared_ptr<const void> closing_mapping;
};

namespace {
// How often a refused real VM's requests look again whether it is admitted
// now (a look reads the database and logs the refusal).
constexpr auto kRefusedLookInterval = std::chrono::seconds(2);

// A slow call's handler runs on a pool thread and queues nothing: only
// immediate calls are slow (CallHandler::slow), and TenantUsage, the one
// call that asks the sink, is not.
class NoWork final : public executor::WorkSink {
 public:
  void submit(executor::TenantId, executor::Work&&, const proto::ReplyTo&) override {}
  uint64_t gpu_ns(executor::TenantId) override { return 0; }
};
}  // namespace

Daemon::Daemon(DaemonConfig config, std::unique_ptr<executor::Backend> backend,
               DaemonStores stores)
    : config_(std::move(config)),
      backend_(std::move(backend)),
      store_(std::move(stores.serving)),
      admin_store_(std::move(stores.admin)),
      ledger_store_(std::move(stores.ledger)),
      quotas_(std::make_unique<QuotaControl>(store_.get(), admin_store_.get(),
                                             static_cast<uint32_t>(geteuid()))),
      scheduling_(config_.scheduling ? config_.scheduling : std::make_shared<SchedulerControl>()),
      calls_(backend_.get(), this),
      slow_calls_(config_.call_threads) {}

Daemon::~Daemon() { stop(); }

std::string Daemon::socket_path() const { return config_.runtime_dir + "/" + VGPU_SOCKET_NAME; }

Status Daemon::start(std::string* why) {
  dispatcher_ = std::make_unique<scheduler::Dispatcher>(
      backend_.get(), scheduling_->make_policy(), quotas_.get(), &clock_,
      scheduling_->dispatcher_config(),
      [this](const scheduler::Command& c, const executor::ExecResult& r) { on_complete(c, r); },
      [this] { loop_->wake(); });
  scheduling_->attach(dispatcher_.get());
  loop_ = std::make_unique<transport::HostLoop>(socket_path(), config_.geometry, this);
  started_ = std::chrono::steady_clock::now();
  quotas_->set_flush([this] { flush_usage(); });
  quotas_->set_status_source([this] {
    return daemon_status({loop_.get(), backend_.get(), dispatcher_.get(), &counters_, started_});
  });
  if (Status s = serve_vms(*loop_, config_.vms, why, config_.vm_gid); !ok(s)) return s;
  libvirt_ = std::make_unique<LibvirtControl>(
      ledger_store_.get(),
      vm_hooks(loop_.get(), dispatcher_.get(), config_.runtime_dir, config_.vm_gid),
      config_.libvirt_uri);
  quotas_->set_request_hook([this](const nlohmann::json& request, nlohmann::json* answer) {
    libvirt_->after_request(request, answer);
  });
  dispatcher_->start();
  if (Status s = quotas_->start(dispatcher_.get(), backend_.get(), config_.runtime_dir, why); !ok(s)) {
    dispatcher_->stop();
    return s;
  }
  if (Status s = loop_->start(why); !ok(s)) {
    quotas_->stop();
    dispatcher_->stop();
    return s;
  }
  // Last: a scrape reads the quotas', the dispatcher's and the loop's state.
  if (!config_.metrics_listen.empty()) {
    metrics_ = std::make_unique<MetricsServer>();
    const Status s = metrics_->start(
        config_.metrics_listen,
        [this] {
          nlohmann::json usage = {{"vms", nlohmann::json::array()}};
          for (const auto& [tenant, u] : dispatcher_->usage_all()) {
            const std::optional<VmPeople> who = people_of_tenant(tenant);
            if (!who) continue;  // never admitted
            usage["vms"].push_back({{"vm", who->vm}, {"student", who->student},
                                    {"course", who->course}, {"gpu_ns", u.gpu_ns},
                                    {"kernels", u.kernels}});
          }
          return prometheus_text(
              daemon_status({loop_.get(), backend_.get(), dispatcher_.get(), &counters_, started_}),
              quotas_->top_all(), usage, latency_view(latency_),
              backend_->device().total_memory);
        },
        why);
    if (!ok(s)) {
      loop_->stop();
      quotas_->stop();
      dispatcher_->stop();
      return s;
    }
    spdlog::info("vgpud: metrics at http://{}:{}/metrics", metrics_->host(), metrics_->port());
  }
  libvirt_->start(why);  // serves the attached VMs, watches their domains
  flush_thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "vgpu-ledger");  // for top -H, perf, gdb
    flusher();
  });
  spdlog::info("vgpud: serving on {} (backend {}, device \"{}\", database {})", socket_path(),
               backend_->name(), backend_->device().name, config_.db_path);
  return Status::kSuccess;
}

void Daemon::stop() {
  if (!loop_) return;
  if (metrics_) metrics_->stop();  // no more scrapes: they read what stops below
  if (libvirt_) libvirt_->stop();  // no more domain events; open sessions end
  quotas_->stop();  // no more admin requests
  loop_->stop();    // closes every channel through on_close
  // Slow calls still running end; the channels they held open close now.
  slow_calls_.stop();
  run_finished();
  dispatcher_->stop();
  {
    std::lock_guard lock(flush_mu_);
    stopping_ = true;
  }
  flush_cv_.notify_all();
  if (flush_thread_.joinable()) flush_thread_.join();
  flush_usage();
  loop_.reset();
  spdlog::info("vgpud: stopped");
}

Status Daemon::admit_user(const std::string& vm, uint32_t uid, std::string* why) {
  if (uid == 0 || uid == geteuid()) return Status::kSuccess;
  bool allowed = false;
  if (const policy::Result usable = store_->vm_usable_by(vm, uid, &allowed); !usable.ok()) {
    *why = "the policy database is unavailable";
    return guest_status(usable);
  }
  if (allowed) return Status::kSuccess;
  // Short: the guest sees at most 111 bytes of it.
  *why = "uid " + std::to_string(uid) + " may not run as VM '" + vm + "' (vgpuctl student uid STUDENT " +
         std::to_string(uid) + ")";
  spdlog::warn("vm {}: turned away uid {}: not the login of the student the VM is bound to, nor a "
               "vgpu admin",
               vm, uid);
  return Status::kNotPermitted;
}

Status Daemon::on_open(uint64_t channel, const std::string& vm,
                       const transport::PeerCredentials& peer, std::span<uint8_t> data_area,
                       std::string* why) {
  // A QEMU of another domain than the one attached as `vm` (docs/libvirt.md).
  if (libvirt_ && !libvirt_->admit(vm, peer.pid, why)) return Status::kNotPermitted;
  // A local process naming a VM that is not its user's. (A real VM's socket
  // is reachable by the VM group only: docs/robustness.md.)
  if (!peer.real_vm) {
    if (Status s = admit_user(vm, peer.uid, why); !ok(s)) return s;
  }
  // The loop thread only reads the database here (in WAL mode a read never
  // waits for a writer); the flusher writes when a known VM was seen.
  TenantId tenant = 0;
  if (const policy::Result found = store_->find_vm(vm, &tenant); !found.ok()) {
    *why = "the policy database is unavailable";
    return guest_status(found);
  }
  auto owned = std::make_unique<Channel>();
  Channel& ch = *owned;
  ch.id = channel;
  ch.tenant = tenant;
  ch.vm = vm;
  ch.data_area = data_area;
  ch.pid = peer.real_vm ? -1 : peer.pid;
  if (tenant == 0) {
    channels_[channel] = std::move(owned);
    spdlog::info("vm {}: channel {} opened (pid {}, uid {}); a VM not seen before: registering it",
                 vm, channel, peer.pid, peer.uid);
    register_vm(ch);
    return Status::kSuccess;
  }
  {
    std::lock_guard lock(flush_mu_);
    seen_vms_.insert(vm);
  }
  // A simulated VM is turned away at once (vgpu-run prints why); a real VM
  // would have to reboot to ask again once a teacher binds it, so its
  // channel is kept.
  if (!peer.real_vm) {
    scheduler::TenantParams params;
    if (!quotas_->admit(tenant, &params, why)) return Status::kNotPermitted;
    channels_[channel] = std::move(owned);
    admit_channel(ch, params);
  } else {
    channels_[channel] = std::move(owned);
    admit_opened(ch, why);
  }
  if (ch.admitted) {
    spdlog::info("vm {}: channel {} opened (pid {}, uid {})", vm, channel, peer.pid, peer.uid);
  }
  return Status::kSuccess;
}

bool Daemon::admit_opened(Channel& ch, std::string* why) {
  scheduler::TenantParams params;
  if (quotas_->admit(ch.tenant, &params, why)) {
    admit_channel(ch, params);
    return true;
  }
  ch.admitted = false;
  ch.next_look = std::chrono::steady_clock::now() + kRefusedLookInterval;
  counters_.waits(ch.tenant, ch.vm);
  spdlog::warn("vm {}: channel {} kept, its calls refused until it is admitted", ch.vm, ch.id);
  return false;
}

void Daemon::register_vm(Channel& ch) {
  ch.admitted = false;
  ch.registering = true;
  run_slow(ch, [this, channel = ch.id, vm = ch.vm] {
    // The ledger's connection: the loop thread's stays free for its reads
    // while this one waits for the lock.
    TenantId tenant = 0;
    const bool known = ledger_store_->tenant_for_vm(vm, &tenant).ok();
    return [this, channel, known, tenant] {
      Channel& c = *find_channel(channel);  // kept while its slow work runs
      if (c.closing) return;
      if (!known) {
        c.next_look = std::chrono::steady_clock::now() + kRefusedLookInterval;
        spdlog::error("vm {}: channel {}: the policy database is unavailable; its calls are "
                      "refused until a look finds it again",
                      c.vm, c.id);
        return;
      }
      c.tenant = tenant;
      c.registering = false;
      std::string why;
      if (admit_opened(c, &why)) spdlog::info("vm {}: channel {} registered and admitted", c.vm, c.id);
    };
  });
}

void Daemon::admit_channel(Channel& ch, const scheduler::TenantParams& params) {
  ch.admitted = true;
  if (channels_per_tenant_[ch.tenant]++ == 0) dispatcher_->add_tenant(ch.tenant, params);
  scheduling_->vm_opened(ch.tenant, ch.vm);  // the weight and course the config file pins on it
  counters_.opened(ch.tenant, ch.vm);
}

bool Daemon::admitted_now(Channel& ch) {
  const auto now = std::chrono::steady_clock::now();
  if (now < ch.next_look) return false;
  if (ch.registering) {  // its write failed: again, and the requests after this one wait for it
    register_vm(ch);
    return false;
  }
  ch.next_look = now + kRefusedLookInterval;
  scheduler::TenantParams params;
  std::string why;
  if (!quotas_->admit(ch.tenant, &params, &why)) return false;
  counters_.waited(ch.tenant);
  admit_channel(ch, params);
  spdlog::info("vm {}: channel {} admitted now", ch.vm, ch.id);
  return true;
}

void Daemon::refuse_request(const proto::ReplyTo& to) {
  if (to.opcode != VGPU_OP_GOODBYE) {
    send_reply(to, Status::kDevicesUnavailable, {});  // the library says why
    return;
  }
  // The process held nothing: its slot is free again at once.
  const uint64_t reserved = 0;
  static_assert(sizeof reserved == VGPU_GOODBYE_PAYLOAD);
  if (!to.quiet) {
    send_reply(to, Status::kSuccess,
               {reinterpret_cast<const uint8_t*>(&reserved), sizeof reserved});
  }
}

Daemon::Channel* Daemon::find_channel(uint64_t id) {
  if (id == found_id_) return found_;
  auto it = channels_.find(id);
  if (it == channels_.end()) return nullptr;
  found_id_ = id;
  found_ = it->second.get();
  return found_;
}

void Daemon::on_request(uint64_t channel, std::span<const uint8_t> message) {
  Channel* found = find_channel(channel);
  if (!found) return;
  if (found->slow_pending) {  // read in the burst after a slow call: served after it
    found->behind.emplace_back(message.begin(), message.end());
    return;
  }
  serve(*found, message);
}

void Daemon::serve(Channel& ch, std::span<const uint8_t> message) {
  const uint64_t channel = ch.id;
  vgpu_msg_header h;
  std::memcpy(&h, message.data(), sizeof h);

  proto::ReplyTo to;
  to.channel = channel;
  to.request_id = h.request_id;
  to.client = h.client;
  to.opcode = h.opcode;
  to.quiet = (h.flags & VGPU_MSG_QUIET) != 0;
  to.received_ns = to.quiet ? 0 : steady_now_ns();  // call latency (call_latency.h)
  if (!ch.admitted && !admitted_now(ch)) {
    refuse_request(to);
    return;
  }

  // The data area this process may name: a simulated VM's whole area (it is
  // one process, client 0), or a real VM process's slot (its client id).
  std::span<uint8_t> data_area;
  auto known = ch.sessions.find(h.client);
  if (!loop_->client_data_area(channel, h.client, &data_area) ||
      (known == ch.sessions.end() && !session_allowed(ch.sessions, h.client))) {
    counters_.malformed(ch.tenant);
    send_reply(to, Status::kInvalidValue, {});
    return;
  }
  if (known == ch.sessions.end()) known = ch.sessions.try_emplace(h.client).first;
  Session& session = known->second;
  if (session.context == 0 && backend_->immediate_calls_wait()) {
    // It may start a worker process (seconds): off the loop thread, and this
    // request is served again once the context exists.
    ch.behind.emplace_front(message.begin(), message.end());
    run_slow(ch, [this, tenant = ch.tenant, channel, client = h.client, to] {
      ContextId context = 0;
      const Status s = backend_->create_context(tenant, &context);
      return [this, channel, client, to, s, context] {
        Channel& c = *find_channel(channel);  // kept while its slow work runs
        auto it = c.sessions.find(client);
        if (ok(s)) {
          it->second.context = context;  // a closing channel releases it with the session
          return;
        }
        c.sessions.erase(it);
        if (c.closing) return;
        c.behind.pop_front();
        send_reply(to, s, {});
      };
    });
    return;
  }
  if (session.context == 0) {
    if (Status s = backend_->create_context(ch.tenant, &session.context); !ok(s)) {
      ch.sessions.erase(h.client);
      send_reply(to, s, {});
      return;
    }
  }
  const executor::Caller caller{ch.tenant, session.context, channel, data_area, to.received_ns};
  if (calls_.slow(h.opcode)) {
    run_slow(ch, [this, caller, to, message = std::vector<uint8_t>(message.begin(), message.end())] {
      NoWork none;
      executor::CallHandler handler(backend_.get(), &none);
      auto out = std::make_shared<const executor::Outcome>(handler.handle(caller, message));
      return [this, channel = caller.channel, to, out] {
        Channel& c = *find_channel(channel);  // kept while its slow work runs
        if (!c.closing) answer(c, to, *out);
      };
    });
    return;
  }
  answer(ch, to, calls_.handle(caller, message));
}

void Daemon::answer(Channel& ch, const proto::ReplyTo& to, const executor::Outcome& out) {
  if (!ok(out.status) && out.status != Status::kNotReady) {  // NotReady: a query's answer
    if (out.malformed) {
      counters_.malformed(ch.tenant);
    } else {
      counters_.refused(ch.tenant);
    }
  }
  const bool replies = out.kind == executor::Outcome::Kind::kReply && !(to.quiet && ok(out.status));
  if (replies && to.received_ns) {
    latency_.record(ch.tenant, CallKind::kImmediate, steady_now_ns() - to.received_ns);
  }
  if (out.end_session) {
    // Goodbye is answered once the session is gone: a real VM reuses the
    // process's data-area slot as soon as the answer arrives.
    std::function<void()> then;
    if (replies) {
      std::vector<uint8_t> reply(out.reply.data(),
                                 out.reply.data() + (ok(out.status) ? out.reply_size : 0));
      then = [this, to, status = out.status, reply = std::move(reply)] {
        send_reply(to, status, reply);
      };
    }
    end_session(ch, to.client, std::move(then));
    return;
  }
  if (replies) send_reply(to, out.status, {out.reply.data(), ok(out.status) ? out.reply_size : 0});
}

bool Daemon::accepting(uint64_t channel) {
  Channel* found = find_channel(channel);
  if (!found) return true;
  Channel& ch = *found;
  if (ch.slow_pending) return false;  // resume() serves what it read meanwhile first
  const bool room = dispatcher_->accepting(ch.tenant);
  if (!room && !ch.held) counters_.backpressure(ch.tenant);
  ch.held = !room;
  return room;
}

void Daemon::on_burst_end(uint64_t) {
  if (burst_.empty()) return;
  hand_on_burst();
  handed_this_pass_ = true;
}

void Daemon::on_pass_end() {
  if (!handed_this_pass_) return;
  handed_this_pass_ = false;
  // The dispatcher may share this core (fewer cores than busy threads): let
  // it run the work now rather than after the loop's polling pause. With a
  // core of its own it is already running, and this costs one system call.
  sched_yield();
}

void Daemon::hand_on_burst() {
  if (burst_.empty()) return;
  dispatcher_->submit(burst_tenant_, burst_);
  burst_.clear();
}

void Daemon::end_session(Channel& ch, uint32_t client, std::function<void()> then) {
  hand_on_burst();  // the purge below must see everything the session queued
  auto it = ch.sessions.find(client);
  if (it == ch.sessions.end()) {
    if (then) then();
    return;
  }
  const ContextId context = it->second.context;
  ch.sessions.erase(it);
  // A kernel of the context may still be running: the context goes when it
  // ends, and the loop (every VM) does not wait for that.
  dispatcher_->purge_context(ch.tenant, context,
                             [backend = backend_.get(), context, then = std::move(then)] {
                               backend->destroy_context(context);
                               if (then) then();
                             });
}

void Daemon::run_slow(Channel& ch, std::function<std::function<void()>()> work) {
  ch.slow_pending = true;
  slow_calls_.post(ch.tenant, [this, channel = ch.id, work = std::move(work)] {
    std::function<void()> finish = work();
    {
      std::lock_guard lock(finished_mu_);
      finished_.push_back([this, channel, finish = std::move(finish)] {
        finish();
        resume(channel);
      });
    }
    any_finished_.store(true, std::memory_order_release);
    loop_->wake();
  });
}

void Daemon::on_wake() {
  if (any_finished_.exchange(false, std::memory_order_acq_rel)) run_finished();
  const uint64_t asked = probe_asked_.load(std::memory_order_acquire);
  if (asked != probe_answered_.load(std::memory_order_relaxed)) {
    {
      std::lock_guard lock(probe_mu_);
      probe_answered_.store(asked, std::memory_order_release);
    }
    probe_cv_.notify_all();
  }
}

bool Daemon::responsive(std::chrono::milliseconds within) {
  std::unique_lock lock(probe_mu_);
  const uint64_t asked = probe_asked_.fetch_add(1, std::memory_order_acq_rel) + 1;
  loop_->wake();
  return probe_cv_.wait_for(lock, within, [&] {
    return probe_answered_.load(std::memory_order_acquire) >= asked;
  });
}

void Daemon::run_finished() {
  std::vector<std::function<void()>> finished;
  {
    std::lock_guard lock(finished_mu_);
    finished.swap(finished_);
  }
  for (auto& f : finished) f();
}

void Daemon::resume(uint64_t channel) {
  Channel* found = find_channel(channel);
  if (!found) return;
  Channel& ch = *found;
  ch.slow_pending = false;
  if (ch.closing) {
    close_now(channel, std::move(ch.closing_mapping));
    return;
  }
  while (!ch.slow_pending && !ch.behind.empty()) {
    const std::vector<uint8_t> message = std::move(ch.behind.front());
    ch.behind.pop_front();
    serve(ch, message);
  }
  hand_on_burst();
}

void Daemon::on_close(uint64_t channel, std::shared_ptr<const void> mapping) {
  hand_on_burst();
  auto it = channels_.find(channel);
  if (it == channels_.end()) return;
  Channel& ch = *it->second;
  if (ch.slow_pending) {  // its slow work may use the data area: closed when it ends
    ch.closing = true;
    ch.closing_mapping = std::move(mapping);
    ch.behind.clear();
    return;
  }
  close_now(channel, std::move(mapping));
}

void Daemon::close_now(uint64_t channel, std::shared_ptr<const void> mapping) {
  auto it = channels_.find(channel);
  if (it == channels_.end()) return;
  Channel& ch = *it->second;
  // The data area stays mapped until the last of the VM's work that may
  // still be running has finished: each callback below holds it.
  const auto hold = [mapping] {};
  std::vector<uint32_t> clients;
  for (const auto& [client, s] : ch.sessions) clients.push_back(client);
  for (uint32_t c : clients) end_session(ch, c, hold);
  if (ch.registering) {
    spdlog::info("vm {}: channel {} closed before the VM was registered", ch.vm, channel);
  } else if (!ch.admitted) {
    counters_.waited(ch.tenant);
    spdlog::info("vm {}: channel {} closed (it was never admitted)", ch.vm, channel);
  } else {
    if (--channels_per_tenant_[ch.tenant] == 0) {
      channels_per_tenant_.erase(ch.tenant);
      quotas_->disconnected(ch.tenant);
      dispatcher_->remove_tenant(ch.tenant, hold);  // its share is free again; its usage is kept
    }
    counters_.closed(ch.tenant);
    spdlog::info("vm {}: channel {} closed, its device state released", ch.vm, channel);
  }
  if (found_id_ == channel) {
    found_id_ = 0;
    found_ = nullptr;
  }
  channels_.erase(it);
}

uint64_t Daemon::gpu_ns(executor::TenantId tenant) {
  const auto all = dispatcher_->usage_all();
  auto it = all.find(tenant);
  return it == all.end() ? 0 : it->second.gpu_ns;
}

Status Daemon::processes(executor::TenantId tenant, std::vector<executor::TenantProcess>* out) {
  for (const auto& [id, ch] : channels_) {
    if (ch->tenant != tenant || !ch->admitted) continue;
    for (const auto& [client, session] : ch->sessions) {
      out->push_back({client, ch->pid, backend_->context_bytes(session.context)});
    }
  }
  return Status::kSuccess;
}

Status Daemon::budget(executor::TenantId tenant, executor::TenantBudget* out) {
  return quotas_->budget(tenant, out);
}

void Daemon::submit(executor::TenantId tenant, executor::Work&& work, const proto::ReplyTo& reply) {
  if (!burst_.empty() && burst_tenant_ != tenant) hand_on_burst();
  burst_tenant_ = tenant;
  burst_.push_back(scheduler::Command{tenant, std::move(work), reply});
}

void Daemon::on_complete(const scheduler::Command& command, const executor::ExecResult& result) {
  if (!ok(result.status)) counters_.work_failed(command.tenant);
  if (command.reply.received_ns) {
    latency_.record(command.tenant, CallKind::kQueued, steady_now_ns() - command.reply.received_ns);
  }
  if (command.reply.quiet && ok(result.status)) return;
  // Every queued call's reply struct is one reserved u64 (see calls.def).
  const uint64_t reserved = 0;
  send_reply(command.reply, result.status,
             ok(result.status) ? std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&reserved),
                                                          sizeof reserved)
                               : std::span<const uint8_t>{});
}

void Daemon::send_reply(const proto::ReplyTo& to, Status status, std::span<const uint8_t> payload) {
  vgpu_msg_header h = proto::make_header(to.opcode, to.request_id, VGPU_MSG_REPLY,
                                         static_cast<uint32_t>(payload.size()),
                                         static_cast<int32_t>(status));
  h.client = to.client;
  const std::span<const uint8_t> parts[2] = {{reinterpret_cast<const uint8_t*>(&h), sizeof h},
                                             payload};
  loop_->reply(to.channel, parts);
}

void Daemon::flush_usage() {
  std::lock_guard one_at_a_time(flushing_);
  const int64_t hour = static_cast<int64_t>(std::time(nullptr)) / 3600 * 3600;
  std::vector<policy::UsageRecord> batch;
  for (const auto& [tenant, now] : dispatcher_->usage_all()) {
    scheduler::TenantUsage& before = flushed_[tenant];
    if (now.commands == before.commands) continue;
    policy::UsageRecord r;
    r.tenant = tenant;
    r.interval_start = hour;
    r.gpu_ns = now.gpu_ns - before.gpu_ns;
    r.kernels = now.kernels - before.kernels;
    r.bytes_to_device = now.bytes_to_device - before.bytes_to_device;
    r.bytes_from_device = now.bytes_from_device - before.bytes_from_device;
    r.peak_memory = backend_->tenant_memory(tenant).peak;
    batch.push_back(r);
    before = now;
  }
  quotas_->attribute(&batch);  // each VM's usage goes to the student it is bound to
  if (!batch.empty() && !ledger_store_->record_usage(batch).ok()) {
    spdlog::error("vgpud: could not write {} usage records to the database", batch.size());
  }
  std::unordered_set<std::string> seen;
  {
    std::lock_guard lock(flush_mu_);
    seen.swap(seen_vms_);
  }
  for (const std::string& vm : seen) {
    TenantId tenant = 0;
    if (!ledger_store_->tenant_for_vm(vm, &tenant).ok()) {  // marks it seen now
      spdlog::error("vgpud: could not write when VM {} was last seen to the database", vm);
    }
  }
}

void Daemon::flusher() {
  std::unique_lock lock(flush_mu_);
  while (!stopping_) {
    flush_cv_.wait_for(lock, config_.flush_interval, [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    flush_usage();
    lock.lock();
  }
}

}  // namespace vgpu::daemon
