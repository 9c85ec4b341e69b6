#include "vgpu/host/sessions.h"

#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cstring>
#include <deque>

#include "vgpu/host/policy_status.h"
#include "vgpu/host/session_rules.h"
#include "vgpu/protocol/codec.h"
#include "vgpu/protocol/vm_region.h"

namespace vgpu::host {

using executor::ContextId;
using scheduler::TenantId;

// One guest process on a channel (a simulated VM has exactly one, client 0).
struct Sessions::Session {
  ContextId context = 0;
};

struct Sessions::Channel {
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

Sessions::Sessions(SessionParts parts)
    : parts_(std::move(parts)),
      backend_(parts_.backend),
      dispatcher_(parts_.dispatcher),
      quotas_(parts_.quotas),
      calls_(backend_, this),
      slow_calls_(parts_.call_threads) {}

Sessions::~Sessions() { stop(); }

void Sessions::stop() {
  slow_calls_.stop();
  run_finished();
}

Status Sessions::admit_user(const std::string& vm, uint32_t uid, std::string* why) {
  if (uid == 0 || uid == geteuid()) return Status::kSuccess;
  bool allowed = false;
  if (const vgpu::Result usable = parts_.store->vm_usable_by(vm, uid, &allowed); !usable.ok()) {
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

Status Sessions::on_open(uint64_t channel, const std::string& vm,
                       const transport::PeerCredentials& peer, std::span<uint8_t> data_area,
                       std::string* why) {
  // A QEMU of another domain than the one attached as `vm` (docs/libvirt.md).
  if (parts_.admit_peer && !parts_.admit_peer(vm, peer.pid, why)) {
    return Status::kNotPermitted;
  }
  // A local process naming a VM that is not its user's. (A real VM's socket
  // is reachable by the VM group only: docs/robustness.md.)
  if (!peer.real_vm) {
    if (Status s = admit_user(vm, peer.uid, why); !ok(s)) return s;
  }
  // The loop thread only reads the database here (in WAL mode a read never
  // waits for a writer); the flusher writes when a known VM was seen.
  TenantId tenant = 0;
  if (const vgpu::Result found = parts_.store->find_vm(vm, &tenant); !found.ok()) {
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
  parts_.usage->seen(vm);
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

bool Sessions::admit_opened(Channel& ch, std::string* why) {
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

void Sessions::register_vm(Channel& ch) {
  ch.admitted = false;
  ch.registering = true;
  run_slow(ch, [this, channel = ch.id, vm = ch.vm] {
    // The ledger's connection: the loop thread's stays free for its reads
    // while this one waits for the lock.
    TenantId tenant = 0;
    const bool known = parts_.ledger_store->tenant_for_vm(vm, &tenant).ok();
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

void Sessions::admit_channel(Channel& ch, const scheduler::TenantParams& params) {
  ch.admitted = true;
  if (channels_per_tenant_[ch.tenant]++ == 0) dispatcher_->add_tenant(ch.tenant, params);
  if (parts_.vm_opened) parts_.vm_opened(ch.tenant, ch.vm);  // what the config file pins on it
  counters_.opened(ch.tenant, ch.vm);
}

bool Sessions::admitted_now(Channel& ch) {
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

void Sessions::refuse_request(const proto::ReplyTo& to) {
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

Sessions::Channel* Sessions::find_channel(uint64_t id) {
  if (id == found_id_) return found_;
  auto it = channels_.find(id);
  if (it == channels_.end()) return nullptr;
  found_id_ = id;
  found_ = it->second.get();
  return found_;
}

void Sessions::on_request(uint64_t channel, std::span<const uint8_t> message) {
  Channel* found = find_channel(channel);
  if (!found) return;
  if (found->slow_pending) {  // read in the burst after a slow call: served after it
    found->behind.emplace_back(message.begin(), message.end());
    return;
  }
  serve(*found, message);
}

void Sessions::serve(Channel& ch, std::span<const uint8_t> message) {
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
    // request is served again once the context exists. The data area's file
    // goes along as a copy of its own: the channel may close meanwhile.
    ch.behind.emplace_front(message.begin(), message.end());
    DataFile file = data_file(channel, h.client);
    run_slow(ch, [this, tenant = ch.tenant, channel, client = h.client, to, data_area,
                  file = std::move(file)] {
      ContextId context = 0;
      const Status s = backend_->create_context(tenant, &context);
      if (ok(s)) attach_data_area(context, file, data_area);
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
    attach_data_area(session.context, data_file(channel, h.client), data_area);
  }
  const executor::Caller caller{ch.tenant, session.context, channel, data_area, to.received_ns};
  if (calls_.slow(h.opcode)) {
    run_slow(ch, [this, caller, to, message = std::vector<uint8_t>(message.begin(), message.end())] {
      NoWork none;
      executor::CallHandler handler(backend_, &none);
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

Sessions::DataFile Sessions::data_file(uint64_t channel, uint32_t client) const {
  int fd = -1;
  uint64_t offset = 0;
  if (!loop_->client_data_file(channel, client, &fd, &offset)) return {};
  const int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return {};
  return {std::shared_ptr<const int>(new int(copy),
                                     [](const int* p) {
                                       ::close(*p);
                                       delete p;
                                     }),
          offset};
}

void Sessions::attach_data_area(ContextId context, const DataFile& file, std::span<uint8_t> area) {
  if (!file.fd) return;
  const Status s = backend_->attach_data_area(context, *file.fd, file.offset, area);
  if (!ok(s) && s != Status::kNotSupported) {
    spdlog::debug("context {}: data area not attached ({}): copies are staged", context,
                  status_name(s));
  }
}

void Sessions::answer(Channel& ch, const proto::ReplyTo& to, const executor::Outcome& out) {
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

bool Sessions::accepting(uint64_t channel) {
  Channel* found = find_channel(channel);
  if (!found) return true;
  Channel& ch = *found;
  if (ch.slow_pending) return false;  // resume() serves what it read meanwhile first
  const bool room = dispatcher_->accepting(ch.tenant);
  if (!room && !ch.held) counters_.backpressure(ch.tenant);
  ch.held = !room;
  return room;
}

void Sessions::on_burst_end(uint64_t) {
  if (burst_.empty()) return;
  hand_on_burst();
  handed_this_pass_ = true;
}

void Sessions::on_pass_end() {
  if (!handed_this_pass_) return;
  handed_this_pass_ = false;
  // The dispatcher may share this core (fewer cores than busy threads): let
  // it run the work now rather than after the loop's polling pause. With a
  // core of its own it is already running, and this costs one system call.
  sched_yield();
}

void Sessions::hand_on_burst() {
  if (burst_.empty()) return;
  dispatcher_->submit(burst_tenant_, burst_);
  burst_.clear();
}

void Sessions::end_session(Channel& ch, uint32_t client, std::function<void()> then) {
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
                             [backend = backend_, context, then = std::move(then)] {
                               backend->destroy_context(context);
                               if (then) then();
                             });
}

void Sessions::run_slow(Channel& ch, std::function<std::function<void()>()> work) {
  ch.slow_pending = true;
  slow_calls_.post(ch.tenant, [this, channel = ch.id, work = std::move(work)] {
    std::function<void()> finish = work();
    {
      MutexLock lock(finished_mu_);
      finished_.push_back([this, channel, finish = std::move(finish)] {
        finish();
        resume(channel);
      });
    }
    any_finished_.store(true, std::memory_order_release);
    loop_->wake();
  });
}

void Sessions::on_wake() {
  if (any_finished_.exchange(false, std::memory_order_acq_rel)) run_finished();
  const uint64_t asked = probe_asked_.load(std::memory_order_acquire);
  if (asked != probe_answered_.load(std::memory_order_relaxed)) {
    {
      MutexLock lock(probe_mu_);
      probe_answered_.store(asked, std::memory_order_release);
    }
    probe_cv_.notify_all();
  }
}

bool Sessions::responsive(std::chrono::milliseconds within) {
  MutexLock lock(probe_mu_);
  const uint64_t asked = probe_asked_.fetch_add(1, std::memory_order_acq_rel) + 1;
  loop_->wake();
  return probe_cv_.wait_for(probe_mu_, within, [&] {
    return probe_answered_.load(std::memory_order_acquire) >= asked;
  });
}

void Sessions::run_finished() {
  std::vector<std::function<void()>> finished;
  {
    MutexLock lock(finished_mu_);
    finished.swap(finished_);
  }
  for (auto& f : finished) f();
}

void Sessions::resume(uint64_t channel) {
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

void Sessions::on_close(uint64_t channel, std::shared_ptr<const void> mapping) {
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

void Sessions::close_now(uint64_t channel, std::shared_ptr<const void> mapping) {
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

uint64_t Sessions::gpu_ns(executor::TenantId tenant) {
  const auto all = dispatcher_->usage_all();
  auto it = all.find(tenant);
  return it == all.end() ? 0 : it->second.gpu_ns;
}

Status Sessions::processes(executor::TenantId tenant, std::vector<executor::TenantProcess>* out) {
  for (const auto& [id, ch] : channels_) {
    if (ch->tenant != tenant || !ch->admitted) continue;
    for (const auto& [client, session] : ch->sessions) {
      out->push_back({client, ch->pid, backend_->context_bytes(session.context)});
    }
  }
  return Status::kSuccess;
}

Status Sessions::budget(executor::TenantId tenant, executor::TenantBudget* out) {
  return quotas_->budget(tenant, out);
}

void Sessions::submit(executor::TenantId tenant, executor::Work&& work, const proto::ReplyTo& reply) {
  if (!burst_.empty() && burst_tenant_ != tenant) hand_on_burst();
  burst_tenant_ = tenant;
  burst_.push_back(scheduler::Command{tenant, std::move(work), reply});
}

void Sessions::on_complete(const scheduler::Command& command, const executor::ExecResult& result) {
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

void Sessions::send_reply(const proto::ReplyTo& to, Status status, std::span<const uint8_t> payload) {
  vgpu_msg_header h = proto::make_header(to.opcode, to.request_id, VGPU_MSG_REPLY,
                                         static_cast<uint32_t>(payload.size()),
                                         static_cast<int32_t>(status));
  h.client = to.client;
  const std::span<const uint8_t> parts[2] = {{reinterpret_cast<const uint8_t*>(&h), sizeof h},
                                             payload};
  loop_->reply(to.channel, parts);
}

}  // namespace vgpu::host
