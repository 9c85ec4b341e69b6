#include "vgpu/transport/ring.h"

#include <atomic>
#include <cstring>

namespace vgpu::transport {
namespace {

uint32_t load_acquire(const uint32_t& v) {
  return std::atomic_ref<uint32_t>(const_cast<uint32_t&>(v)).load(std::memory_order_acquire);
}
void store_release(uint32_t& v, uint32_t x) {
  std::atomic_ref<uint32_t>(v).store(x, std::memory_order_release);
}
void full_barrier() { std::atomic_thread_fence(std::memory_order_seq_cst); }

uint32_t record_size(uint32_t len) { return (len + VGPU_MSG_ALIGN - 1) & ~(VGPU_MSG_ALIGN - 1); }

}  // namespace

// --- writer ------------------------------------------------------------------

RingWriter::RingWriter(vgpu_ring_ctl* ctl, uint8_t* bytes, uint32_t size)
    : ctl_(ctl), bytes_(bytes), size_(size), head_(load_acquire(ctl->head)) {}

bool RingWriter::room_for(uint32_t tail, uint32_t need) const {
  return size_ - (head_ - tail) >= need;
}

bool RingWriter::has_room(uint32_t record) const {
  const uint32_t tail = load_acquire(ctl_->tail);
  if (head_ - tail > size_) return false;
  const uint32_t contiguous = size_ - (head_ & (size_ - 1));
  const uint32_t need = contiguous < record ? contiguous + record : record;
  return room_for(tail, need);
}

// From the shared head, not head_: the receiving thread asks while another
// thread may be writing.
bool RingWriter::all_read() const { return load_acquire(ctl_->tail) == load_acquire(ctl_->head); }

RingWriter::Result RingWriter::write(std::span<const std::span<const uint8_t>> parts) {
  if (corrupt_) return Result::kCorrupt;
  uint32_t len = 0;
  for (const auto& p : parts) len += static_cast<uint32_t>(p.size());
  const uint32_t record = record_size(len);
  if (record > VGPU_MSG_MAX_SIZE) return Result::kCorrupt;

  const uint32_t tail = load_acquire(ctl_->tail);
  if (head_ - tail > size_ || (tail & (VGPU_MSG_ALIGN - 1)) != 0) {
    corrupt_ = true;  // the consumer published an index it cannot have
    return Result::kCorrupt;
  }
  uint32_t pos = head_ & (size_ - 1);
  const uint32_t contiguous = size_ - pos;
  const uint32_t need = contiguous < record ? contiguous + record : record;
  if (!room_for(tail, need)) return Result::kFull;

  if (contiguous < record) {
    // The message would straddle the end: pad to the end, start over at 0.
    if (contiguous >= VGPU_MSG_HEADER_SIZE) {
      vgpu_msg_header pad{};
      pad.magic = VGPU_MSG_MAGIC;
      pad.version = VGPU_PROTOCOL_VERSION;
      pad.opcode = VGPU_OP_PAD;
      pad.payload_len = contiguous - VGPU_MSG_HEADER_SIZE;
      std::memcpy(bytes_ + pos, &pad, sizeof pad);
    }
    head_ += contiguous;
    pos = 0;
  }
  uint8_t* dst = bytes_ + pos;
  for (const auto& p : parts) {
    if (p.empty()) continue;  // an empty span may have no data pointer at all
    std::memcpy(dst, p.data(), p.size());
    dst += p.size();
  }
  head_ += record;
  store_release(ctl_->head, head_);
  return Result::kOk;
}

bool RingWriter::consumer_waiting() const {
  full_barrier();
  return load_acquire(ctl_->consumer_waiting) != 0;
}

void RingWriter::set_producer_waiting(bool waiting) {
  store_release(ctl_->producer_waiting, waiting ? 1u : 0u);
  full_barrier();
}

// --- reader ------------------------------------------------------------------

RingReader::RingReader(vgpu_ring_ctl* ctl, uint8_t* bytes, uint32_t size)
    : ctl_(ctl), bytes_(bytes), size_(size), tail_(load_acquire(ctl->tail)) {}

bool RingReader::empty() const { return load_acquire(ctl_->head) == tail_; }

RingReader::Result RingReader::read(std::vector<uint8_t>* out) {
  if (corrupt_) return Result::kCorrupt;
  for (;;) {
    const uint32_t head = load_acquire(ctl_->head);
    const uint32_t used = head - tail_;
    if (used == 0) return Result::kEmpty;
    if (used > size_ || (used & (VGPU_MSG_ALIGN - 1)) != 0) {
      corrupt_ = true;
      return Result::kCorrupt;
    }
    const uint32_t pos = tail_ & (size_ - 1);
    const uint32_t contiguous = size_ - pos;
    if (contiguous < VGPU_MSG_HEADER_SIZE) {  // too short for a header: skipped by rule
      if (used < contiguous) {
        corrupt_ = true;
        return Result::kCorrupt;
      }
      tail_ += contiguous;
      store_release(ctl_->tail, tail_);
      continue;
    }
    if (used < VGPU_MSG_HEADER_SIZE) {
      corrupt_ = true;
      return Result::kCorrupt;
    }
    // Copy the header out once: the producer may change shared memory at will.
    vgpu_msg_header h;
    std::memcpy(&h, bytes_ + pos, sizeof h);
    if (h.magic != VGPU_MSG_MAGIC || h.payload_len > VGPU_MSG_MAX_PAYLOAD) {
      corrupt_ = true;
      return Result::kCorrupt;
    }
    const uint32_t len = VGPU_MSG_HEADER_SIZE + h.payload_len;
    const uint32_t record = record_size(len);
    if (h.opcode == VGPU_OP_PAD && !(h.flags & VGPU_MSG_REPLY) && h.request_id == 0) {
      if (record != contiguous || used < contiguous) {
        corrupt_ = true;
        return Result::kCorrupt;
      }
      tail_ += contiguous;
      store_release(ctl_->tail, tail_);
      continue;
    }
    if (record > contiguous || record > used) {
      corrupt_ = true;
      return Result::kCorrupt;
    }
    out->resize(len);
    std::memcpy(out->data(), &h, sizeof h);
    std::memcpy(out->data() + sizeof h, bytes_ + pos + sizeof h, h.payload_len);
    tail_ += record;
    store_release(ctl_->tail, tail_);
    return Result::kMessage;
  }
}

void RingReader::set_consumer_waiting(bool waiting) {
  store_release(ctl_->consumer_waiting, waiting ? 1u : 0u);
  full_barrier();
}

bool RingReader::producer_needs_wake() const {
  full_barrier();
  if (load_acquire(ctl_->producer_waiting) == 0) return false;
  // The producer's head is untrusted: a value it cannot have wakes it anyway
  // (harmless), and the next read reports the corruption.
  const uint32_t used = load_acquire(ctl_->head) - tail_;
  return used > size_ || used <= size_ / 2;
}

}  // namespace vgpu::transport
