// The host side of every forwarded call: decodes a request a guest sent,
// validates each field against the caller's own tables (through the Backend),
// and either answers it at once or turns it into queued Work.
//
// It owns no threads and no descriptors: the transport hands it a message and
// the caller it came from; queued work leaves through a WorkSink (the daemon
// connects it to the scheduler).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "vgpu/executor/backend.h"
#include "vgpu/protocol/calls.h"
#include "vgpu/protocol/codec.h"
#include "vgpu/protocol/reply_to.h"

namespace vgpu::executor {

// The GPU-time budget of the student a tenant's VM is bound to (vgpu-smi in
// the guest asks for it), as the daemon's quota accounting keeps it.
// One session of a tenant (one guest process): its client id on the
// channel, the process id of the channel's peer (-1 for a real VM, whose
// peer is QEMU), and the device memory its context holds.
struct TenantProcess {
  uint32_t client = 0;
  int32_t pid = -1;
  uint64_t bytes = 0;
};

struct TenantBudget {
  bool bound = false;        // the VM is bound to a student
  bool limited = false;      // a GPU-time quota applies
  bool open = true;          // inside the budget's days (a date range's)
  bool best_effort = false;  // past its budget, running best-effort
  bool renews = false;       // the window is a day, week or month (not a range)
  int64_t budget_ns = 0, spent_ns = 0, left_ns = 0;
  int64_t window_start = 0, window_end = 0;  // unix seconds, [start, end)
  uint64_t memory_cap = 0;                   // 0: none
  uint32_t on_exhaust = 0;                   // 0 reject, 1 wait, 2 best-effort
  std::string vm, student, course, quota;    // quota as vgpuctl writes it
};

class WorkSink {
 public:
  virtual ~WorkSink() = default;
  // Work the backend has accepted; the sink must eventually execute or
  // discard it and send the reply to `reply`.
  virtual void submit(TenantId tenant, Work&& work, const proto::ReplyTo& reply) = 0;
  // Device time charged to the tenant so far (its share of the GPU, as
  // NVML's utilization reports it in the VM).
  virtual uint64_t gpu_ns(TenantId tenant) = 0;
  // The tenant's budget; kNotSupported where the sink keeps no quotas.
  virtual Status budget(TenantId tenant, TenantBudget* out) {
    (void)tenant;
    (void)out;
    return Status::kNotSupported;
  }
  // The device memory of each of the tenant's sessions (TenantProcess);
  // kNotSupported where the sink keeps no sessions.
  virtual Status processes(TenantId tenant, std::vector<TenantProcess>* out) {
    (void)tenant;
    (void)out;
    return Status::kNotSupported;
  }
};

// Who sent a request. The tenant and context come from the channel the
// message arrived on, never from the message.
struct Caller {
  TenantId tenant = 0;
  ContextId context = 0;
  uint64_t channel = 0;
  std::span<uint8_t> data_area;  // the channel's data area, mapped by the host
  uint64_t received_ns = 0;       // when the host read the request (ReplyTo::received_ns)
};

struct Outcome {
  enum class Kind {
    kReply,   // answer now with `status` (+ reply bytes on success)
    kQueued,  // the sink will answer after the work ran
  };
  Kind kind = Kind::kReply;
  Status status = Status::kSuccess;
  bool end_session = false;  // Goodbye: the caller releases its context
  bool malformed = false;    // refused by the decoder, before any handler (counted apart)
  uint32_t reply_size = 0;
  // Only the first reply_size bytes are ever read: left uninitialised, so
  // that the quickest calls do not zero 1 KiB each.
  alignas(8) std::array<uint8_t, 1024> reply;

  static Outcome failure(Status s) {
    Outcome o;
    o.status = s;
    return o;
  }
  template <class Reply>
  static Outcome replying(const Reply& r) {
    Outcome o;
    o.set_reply(r);
    return o;
  }
  template <class Reply>
  void set_reply(const Reply& r) {
    static_assert(sizeof(Reply) <= sizeof(reply));
    std::memcpy(reply.data(), &r, sizeof r);
    reply_size = sizeof r;
  }
};

struct CallStats {
  uint64_t requests = 0;
  uint64_t rejected = 0;  // malformed or invalid requests answered with an error
};

class CallHandler {
 public:
  CallHandler(Backend* backend, WorkSink* sink) : backend_(backend), sink_(sink) {}

  // `message` is a whole message (header + payload) in host-private memory.
  // One CallHandler serves one thread at a time: a thread that answers calls
  // elsewhere has its own (they share the backend).
  Outcome handle(const Caller& caller, std::span<const uint8_t> message);

  // Whether answering `opcode` may take long: parsing a module a guest
  // chose, or (with a backend whose immediate calls wait on a worker) any
  // immediate call the backend answers. The host answers those off the
  // thread that reads every VM's requests. Never a queued call or Goodbye.
  bool slow(uint16_t opcode) const;

  // The per-call handlers, one per entry of calls.def (called via proto::dispatch).
#define VGPU_CALL(id, Name, ...)                                                  \
  Outcome handle(const vgpu_msg_header& h, const proto::Name##Request& request, \
                 std::span<const uint8_t> tail);
#include "vgpu/protocol/calls.def"
#undef VGPU_CALL
  Outcome reject(const vgpu_msg_header& h, proto::DecodeError error);

 private:
  // Queues work after the backend accepted it.
  Outcome queue(const vgpu_msg_header& h, Handle stream, WorkOp op);
  // [offset, offset + size) within the caller's data area, or nullptr.
  uint8_t* data_range(uint64_t offset, uint64_t size) const;

  Backend* const backend_;
  WorkSink* const sink_;
  const Caller* caller_ = nullptr;  // the caller of the request being handled
};

}  // namespace vgpu::executor
