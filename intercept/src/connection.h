// The process's connection to the host: connects on first use (registrations
// run before main and must not need it), sends requests, matches replies, and
// remembers what asynchronous requests still owe (a staging buffer to free,
// bytes to copy out to the application).
//
// Thread-safe: one lock guards the connection's state, and every entry point
// holds it (Connection::Lock; the methods say REQUIRES(mu_)). A thread waiting
// for a reply lets it go while it is blocked, so a thread synchronizing on one
// stream does not hold up another thread's launches. One waiting thread at a
// time reads the channel (the reader); it hands the others their replies and
// wakes them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>

#include "pinned_area.h"
#include "staging.h"
#include "vgpu/protocol/codec.h"
#include "vgpu/thread_annotations.h"
#include "vgpu/transport/doorbell.h"
#include "vgpu/transport/guest_transport.h"

namespace vgpu::intercept {

// What to do when the reply to an asynchronous request arrives.
struct Completion {
  bool release_staging = false;
  uint64_t staging_offset = 0;
  void* copy_to = nullptr;  // device-to-host: copy the staged bytes here on success
  uint64_t copy_size = 0;
  // A copy of rows: the staged rows are `copy_width` bytes each, back to
  // back; they land `copy_pitch` apart from copy_to. 0: one contiguous range.
  uint64_t copy_width = 0, copy_pitch = 0;
  Status* result = nullptr;  // where a waiting caller wants this request's status
  bool pinned = false;       // the request reads or writes pinned host memory
  uint64_t copy_bytes = 0;   // bytes it moves between host memory and the device
};

class Connection {
 public:
  static Connection& instance();

  // The lock every API entry point holds while it talks to the host, for its
  // scope: `Connection::Lock lock(c);`. Constructed, not returned by a lock()
  // method: clang's analysis cannot follow a lock returned by value.
  class SCOPED_CAPABILITY Lock {
   public:
    explicit Lock(Connection& c) ACQUIRE(c.mu_) : mu_(c.mu_) { mu_.lock(); }
    ~Lock() RELEASE() { mu_.unlock(); }
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;

   private:
    Mutex& mu_;
  };
  // The lock, for functions that expect it held: REQUIRES(c.mutex()).
  Mutex& mutex() RETURN_CAPABILITY(mu_) { return mu_; }

  // Connects if not yet connected. kNoDevice with one log line when vgpud
  // cannot be reached; kDevicesUnavailable once it has gone away.
  Status ensure() REQUIRES(mu_);

  // Sends a request and waits for its reply (the lock is let go while
  // blocked). Replies to earlier asynchronous requests are handled while
  // waiting.
  template <class Request, class Reply = typename proto::Call<proto::OpOf<Request>::value>::Reply>
  Status call(const Request& req, std::span<const uint8_t> tail, Reply* reply) REQUIRES(mu_) {
    uint64_t id = 0;
    if (Status s = send(req, tail, 0, &id); !ok(s)) return s;
    return wait(id, proto::OpOf<Request>::value, reply, sizeof(Reply));
  }

  // Sends a request without waiting. With no completion the host answers
  // only a failure, which surfaces at the next synchronising call.
  template <class Request>
  Status post(const Request& req, std::span<const uint8_t> tail, const Completion* completion,
              uint64_t* id_out = nullptr) REQUIRES(mu_) {
    uint64_t id = 0;
    if (Status s = send(req, tail, completion ? 0 : VGPU_MSG_QUIET, &id); !ok(s)) return s;
    if (completion) {
      pending_[id] = *completion;
      if (completion->pinned) ++pinned_in_flight_;
      copy_bytes_in_flight_ += completion->copy_bytes;
    }
    if (id_out) *id_out = id;
    return Status::kSuccess;
  }

  // Waits until the reply to `id` (an earlier post) has been handled. Like
  // every wait here (stage, pin, unpin too), it lets the lock go while
  // blocked: what the caller read under the lock before may have changed.
  Status drain_until(uint64_t id) REQUIRES(mu_);

  // A staging buffer of `size` bytes in the data area (waits for replies to
  // free space). kInvalidValue if it can never fit.
  Status stage(uint64_t size, uint64_t* offset) REQUIRES(mu_);
  void unstage(uint64_t offset) REQUIRES(mu_) {
    staging_->release(offset);
    replies_.notify_all();  // a thread may wait for staging space
  }

  // Pinned host memory: a block of the data area above the staging ring
  // (pinned_area.h), at most three quarters of it; the ring keeps the rest.
  // kMemoryAllocation when no block that large is free.
  Status pin(uint64_t size, void** ptr) REQUIRES(mu_);
  // Frees a block pin() returned, after every request in flight that uses
  // pinned memory has been answered. *was_pinned is false (and nothing
  // happens) when `ptr` is not such a block.
  Status unpin(void* ptr, bool* was_pinned) REQUIRES(mu_);
  // The data-area offset of [p, p + size) when it lies inside one pinned block.
  std::optional<uint64_t> pinned_offset(const void* p, uint64_t size) const REQUIRES(mu_);
  uint8_t* data(uint64_t offset) REQUIRES(mu_) { return channel_->data().data() + offset; }
  uint64_t chunk_size(uint64_t copy_size) const REQUIRES(mu_) {
    return staging_->chunk_for(copy_size);
  }

  // The first error an asynchronous request reported since the last call to
  // this (then cleared), or success.
  Status take_async_error() REQUIRES(mu_);
  // Puts back an error taken by a caller that is not the one to report it
  // (the guest's own housekeeping): the next synchronising call reports it,
  // unless an earlier error is already waiting.
  void defer_async_error(Status s) REQUIRES(mu_) {
    if (ok(async_error_)) async_error_ = s;
  }

 private:
  Connection() = default;
  template <class Request>
  Status send(const Request& req, std::span<const uint8_t> tail, uint32_t flags, uint64_t* id)
      REQUIRES(mu_) {
    if (Status s = ensure(); !ok(s)) return s;
    *id = next_id_++;
    uint8_t head[VGPU_MSG_HEADER_SIZE + sizeof(Request)];
    proto::encode_request(std::span(head), *id, flags, req);
    vgpu_msg_header* h = reinterpret_cast<vgpu_msg_header*>(head);
    h->payload_len = static_cast<uint32_t>(sizeof(Request) + tail.size());
    const std::span<const uint8_t> parts[2] = {head, tail};
    return lost(send_parts(parts));
  }
  // Writes one request, taking replies while the ring is full (the lock is
  // let go meanwhile): vgpud reads no more requests from a process whose
  // replies wait unread, so waiting for room alone could wait forever.
  Status send_parts(std::span<const std::span<const uint8_t>> parts) REQUIRES(mu_);
  // A thread in call() waiting for its reply; the reader copies it in.
  struct CallWaiter {
    uint64_t id;
    std::vector<uint8_t> message;  // header + payload
    bool arrived = false;
  };

  // Handles replies until the one for `id`; copies its payload into `reply`.
  Status wait(uint64_t id, proto::Op op, void* reply, size_t reply_size) REQUIRES(mu_);
  // Hands the reply in buffer_ to the thread that waits for it, or completes
  // the asynchronous request it answers.
  void route() REQUIRES(mu_);
  // Handles one reply that is not the one being waited for.
  void complete(const vgpu_msg_header& h, std::span<const uint8_t> payload) REQUIRES(mu_);
  // A device-to-host copy's staged bytes land in the program's memory.
  void land(const Completion& c) REQUIRES(mu_);
  // Reads one reply from `channel`, blocking, without the lock (the reader
  // only). Polls first for `poll` (copy_polling.h). kDevicesUnavailable if
  // the daemon went away.
  Status receive_one(transport::GuestTransport& channel, std::chrono::microseconds poll,
                     std::vector<uint8_t>* out) EXCLUDES(mu_);
  // Waits until `done()` holds (checked with the lock held), as the reader
  // or as a thread the reader wakes. A `done` that reads what mu_ guards is
  // declared `[&]() REQUIRES(mu_) { ... }`.
  template <class Done>
  Status handle_replies_until(Done done) REQUIRES(mu_);
  Status lost(Status s) REQUIRES(mu_);
  // A simulated VM: the daemon socket and VM name vgpu-run passes in the environment.
  Status connect_simulated(std::string* why) REQUIRES(mu_);

  Mutex mu_;
  CondVar replies_;  // a reply was handled, or the reader left
  bool reading_ GUARDED_BY(mu_) = false;  // a thread is reading the channel, without mu_
  // Threads in call(), the reader's own included.
  std::vector<CallWaiter*> waiters_ GUARDED_BY(mu_);
  // /dev/vgpu or a simulated VM's channel. Set once; the reader uses it
  // without mu_ through a reference taken under it.
  std::unique_ptr<transport::GuestTransport> channel_ GUARDED_BY(mu_);
  std::unique_ptr<Staging> staging_ GUARDED_BY(mu_);
  PinnedArea pinned_ GUARDED_BY(mu_);
  uint64_t pinned_in_flight_ GUARDED_BY(mu_) = 0;  // pending requests with Completion::pinned
  // Completion::copy_bytes of the pending requests.
  uint64_t copy_bytes_in_flight_ GUARDED_BY(mu_) = 0;
  // Connecting failed once: do not retry on every call.
  bool refused_ GUARDED_BY(mu_) = false;
  Status refused_status_ GUARDED_BY(mu_) = Status::kNoDevice;
  uint64_t next_id_ GUARDED_BY(mu_) = 1;
  std::unordered_map<uint64_t, Completion> pending_ GUARDED_BY(mu_);
  Status async_error_ GUARDED_BY(mu_) = Status::kSuccess;
  // The reader's (reading_ says who that is): filled without mu_, read with it.
  std::vector<uint8_t> buffer_;
};

// A synchronising call's result: its own failure, else the first failure an
// earlier asynchronous call reported.
inline Status with_async_errors(Connection& c, Status own) REQUIRES(c.mutex()) {
  const Status async = c.take_async_error();
  return ok(own) ? async : own;
}

}  // namespace vgpu::intercept
