#include "connection.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "copy_polling.h"
#include "log.h"
#include "vgpu/protocol/handover.h"
#include "vgpu/transport/device_client.h"
#include "vgpu/transport/guest_channel.h"
#include "vgpu/transport/vgpu_dev.h"

namespace vgpu::intercept {

using namespace std::chrono_literals;

Connection& Connection::instance() {
  // Never destroyed: atexit handlers and static destructors may still call in.
  static Connection* c = new Connection();
  return *c;
}

Status Connection::ensure() {
  if (channel_) return channel_->daemon_gone() ? Status::kDevicesUnavailable : Status::kSuccess;
  if (refused_) return refused_status_;
  refused_ = true;
  std::string why;
  // In a real VM the kernel module's device is there; a simulated VM is named
  // by vgpu-run.
  const Status s = transport::DeviceClient::present(VGPU_DEV_PATH)
                       ? transport::DeviceClient::open(VGPU_DEV_PATH, &channel_, &why)
                       : connect_simulated(&why);
  if (!ok(s)) {
    log_line("%s", why.c_str());
    return refused_status_ = s;
  }
  // Pinned host memory may take the top three quarters of the data area; the
  // staging ring has all of it until pinned blocks claim their part.
  const uint64_t total = channel_->data().size();
  const uint64_t page = PinnedArea::kPage;
  const uint64_t pinned_begin = (total / 4 + page - 1) & ~(page - 1);
  pinned_ = PinnedArea(pinned_begin, total > pinned_begin ? (total - pinned_begin) & ~(page - 1) : 0);
  staging_ = std::make_unique<Staging>(total);
  refused_ = false;
  return Status::kSuccess;
}

Status Connection::connect_simulated(std::string* why) {
  const char* dir = std::getenv("VGPU_RUNTIME_DIR");
  const char* vm = std::getenv("VGPU_VM");
  if (!vm || !*vm) {
    *why = "VGPU_VM is not set: run the program with `vgpu-run --vm NAME -- PROGRAM`";
    return Status::kNoDevice;
  }
  if (!dir || !*dir) {
    *why = "VGPU_RUNTIME_DIR is not set: run the program with `vgpu-run`";
    return Status::kNoDevice;
  }
  std::unique_ptr<transport::GuestChannel> channel;
  const std::string path = std::string(dir) + "/" + VGPU_SOCKET_NAME;
  if (Status s = transport::GuestChannel::connect(path, vm, &channel, why); !ok(s)) return s;
  channel_ = std::move(channel);
  return Status::kSuccess;
}

Status Connection::lost(Status s) {
  if (s == Status::kDevicesUnavailable) {
    log_once("lost", "lost the connection to vgpud; every CUDA call now fails");
    pending_.clear();  // no reply will come; nothing may touch their buffers
    pinned_in_flight_ = 0;
    copy_bytes_in_flight_ = 0;
    replies_.notify_all();  // threads waiting for those requests
  }
  return s;
}

Status Connection::receive_one(transport::GuestTransport& channel, std::chrono::microseconds poll,
                               std::vector<uint8_t>* out) {
  channel.set_poll(poll);
  for (;;) {
    const Status s = channel.receive(out, 1000ms);
    if (s == Status::kNotReady) continue;  // still waiting; the channel checks the daemon is alive
    return s;
  }
}

namespace {

// vgpud answers cudaErrorNotPermitted to queued work only when the VM's
// GPU-time quota is spent (and the quota says reject), and
// cudaErrorDevicesUnavailable to every call of a VM it does not admit (yet):
// say so once, since the error's name alone does not tell the user why.
Status note_refusal(Status s) {
  if (s == Status::kNotPermitted) {
    log_once("quota",
             "GPU-time quota exhausted: vgpud refuses this VM's GPU work (cudaErrorNotPermitted) "
             "until the quota period renews or a teacher raises the quota");
  } else if (s == Status::kDevicesUnavailable) {
    log_once("not-admitted",
             "vgpud does not admit this VM (cudaErrorDevicesUnavailable), e.g. because it is "
             "bound to no student on a host that refuses those; it is served once admitted, "
             "without a reboot");
  }
  return s;
}

}  // namespace

void Connection::land(const Completion& c) {
  const uint8_t* from = data(c.staging_offset);
  auto* to = static_cast<uint8_t*>(c.copy_to);
  if (c.copy_width == 0) {
    std::memcpy(to, from, c.copy_size);
    return;
  }
  for (uint64_t done = 0; done < c.copy_size; done += c.copy_width, to += c.copy_pitch) {
    std::memcpy(to, from + done, c.copy_width);
  }
}

void Connection::complete(const vgpu_msg_header& h, std::span<const uint8_t>) {
  const auto status = note_refusal(static_cast<Status>(h.status));
  auto it = pending_.find(h.request_id);
  if (it == pending_.end()) {
    // A quiet request failed: report it at the next synchronising call.
    if (!ok(status) && ok(async_error_)) async_error_ = status;
    // Quiet requests succeed silently, so a success here answers nothing.
    if (ok(status)) log_once("unexpected-reply", "vgpud answered a request nobody waits for");
    return;
  }
  const Completion c = it->second;
  pending_.erase(it);
  if (c.pinned) --pinned_in_flight_;
  copy_bytes_in_flight_ -= c.copy_bytes;
  if (ok(status) && c.copy_to) land(c);
  if (c.release_staging) staging_->release(c.staging_offset);
  if (c.result) {
    if (ok(*c.result)) *c.result = status;
  } else if (!ok(status) && ok(async_error_)) {
    async_error_ = status;
  }
}

void Connection::route() {
  vgpu_msg_header h;
  std::memcpy(&h, buffer_.data(), sizeof h);
  for (CallWaiter* w : waiters_) {
    if (w->id == h.request_id) {
      w->message.assign(buffer_.begin(), buffer_.end());
      w->arrived = true;
      return;
    }
  }
  complete(h, {buffer_.data() + sizeof h, h.payload_len});
}

template <class Done>
Status Connection::handle_replies_until(Done done) {
  // mu_ is the caller's (a Connection::Lock): let go and taken again here,
  // held on return.
  Status s = Status::kSuccess;
  while (!done()) {
    if (reading_) {
      replies_.wait(mu_);  // the reader wakes us after each reply it handles
      continue;
    }
    reading_ = true;
    const auto poll = poll_for_copies(copy_bytes_in_flight_);
    transport::GuestTransport& channel = *channel_;
    mu_.unlock();  // other threads send (and queue to wait) meanwhile
    s = receive_one(channel, poll, &buffer_);
    mu_.lock();
    reading_ = false;
    if (ok(s)) {
      route();
    } else {
      lost(s);
    }
    replies_.notify_all();  // their reply, their condition, or the reader's role
    if (!ok(s)) break;
  }
  return s;
}

Status Connection::send_parts(std::span<const std::span<const uint8_t>> parts) {
  for (;;) {
    const Status s = channel_->try_send(parts);
    if (s != Status::kNotReady) return s;
    if (reading_) {
      // Another thread takes the replies and wakes us after each one; the
      // ring may also gain room without a reply, hence the bound.
      replies_.wait_for(mu_, 1ms);
      continue;
    }
    reading_ = true;
    transport::GuestTransport& channel = *channel_;
    mu_.unlock();
    const Status r = channel.receive(&buffer_, 1ms);
    mu_.lock();
    reading_ = false;
    if (ok(r)) route();
    replies_.notify_all();  // their reply, or the reader's role
    if (!ok(r) && r != Status::kNotReady) return r;
  }
}

Status Connection::wait(uint64_t id, proto::Op op, void* reply, size_t reply_size) {
  CallWaiter w{id, {}, false};
  waiters_.push_back(&w);
  const Status received = handle_replies_until([&] { return w.arrived; });
  std::erase(waiters_, &w);
  if (!ok(received)) return received;
  vgpu_msg_header h;
  std::memcpy(&h, w.message.data(), sizeof h);
  const std::span<const uint8_t> payload(w.message.data() + sizeof h, h.payload_len);
  if (h.opcode != static_cast<uint16_t>(op) || !(h.flags & VGPU_MSG_REPLY)) {
    log_once("bad-reply", "vgpud sent a reply that does not match the request");
    return Status::kUnknown;
  }
  if (h.status != 0) return note_refusal(static_cast<Status>(h.status));
  if (payload.size() != reply_size) {
    log_once("bad-reply-size", "vgpud sent a reply of the wrong size (version mismatch?)");
    return Status::kUnknown;
  }
  std::memcpy(reply, payload.data(), reply_size);
  return Status::kSuccess;
}

Status Connection::drain_until(uint64_t id) {
  return handle_replies_until([&]() REQUIRES(mu_) { return pending_.count(id) == 0; });
}

Status Connection::stage(uint64_t size, uint64_t* offset) {
  if (Status s = ensure(); !ok(s)) return s;
  // The ring ends below the lowest pinned block; it moves up again (once the
  // ring is empty) after pinned blocks were freed.
  if (staging_->empty()) staging_->resize(pinned_.boundary());
  if (size > staging_->capacity()) {
    if (size > pinned_.boundary()) return Status::kInvalidValue;  // can never fit
    const Status s = handle_replies_until([&]() REQUIRES(mu_) { return staging_->empty(); });
    if (!ok(s)) return s;
    staging_->resize(pinned_.boundary());
  }
  // While full, earlier requests still hold buffers; their replies free them.
  return handle_replies_until([&]() REQUIRES(mu_) {
    const auto o = staging_->try_alloc(size);
    if (o) *offset = *o;
    return o.has_value();
  });
}

Status Connection::pin(uint64_t size, void** ptr) {
  if (Status s = ensure(); !ok(s)) return s;
  const auto offset = pinned_.allocate(size);
  if (!offset) return Status::kMemoryAllocation;
  if (*offset < staging_->capacity()) {
    // The block reaches into the staging ring: let the ring empty, then end
    // it below the block.
    const Status s = handle_replies_until([&]() REQUIRES(mu_) { return staging_->empty(); });
    if (!ok(s)) {
      pinned_.release(*offset);
      return s;
    }
    staging_->resize(pinned_.boundary());
  }
  *ptr = data(*offset);
  return Status::kSuccess;
}

std::optional<uint64_t> Connection::pinned_offset(const void* p, uint64_t size) const {
  if (!channel_ || pinned_.in_use() == 0) return std::nullopt;
  const auto base = reinterpret_cast<uintptr_t>(channel_->data().data());
  const auto at = reinterpret_cast<uintptr_t>(p);
  if (at < base || at - base >= channel_->data().size()) return std::nullopt;
  const uint64_t offset = at - base;
  if (!pinned_.holds(offset, size)) return std::nullopt;
  return offset;
}

Status Connection::unpin(void* ptr, bool* was_pinned) {
  *was_pinned = false;
  const auto offset = pinned_offset(ptr, 1);
  if (!offset || !pinned_.starts_block(*offset)) return Status::kSuccess;
  *was_pinned = true;
  // The host may still read or write pinned memory for a request in flight.
  const Status s = handle_replies_until([&]() REQUIRES(mu_) { return pinned_in_flight_ == 0; });
  pinned_.release(*offset);
  return s;
}

Status Connection::take_async_error() {
  const Status s = async_error_;
  async_error_ = Status::kSuccess;
  return s;
}

}  // namespace vgpu::intercept
