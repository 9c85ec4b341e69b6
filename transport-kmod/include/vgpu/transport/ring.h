// One direction of a region: a byte ring of whole messages (see
// protocol/region.h for the rules both sides follow).
//
// Each side keeps its own index privately and publishes it; the index the
// other side publishes is untrusted and checked on every read. A ring that
// breaks the rules reports kCorrupt and is never read again: the channel is
// torn down, since a byte stream cannot be resynchronised safely.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "vgpu/protocol/region.h"

namespace vgpu::transport {

class RingWriter {
 public:
  RingWriter() = default;
  RingWriter(vgpu_ring_ctl* ctl, uint8_t* bytes, uint32_t size);

  enum class Result { kOk, kFull, kCorrupt };
  // Copies a message (header + payload parts) into the ring and publishes it.
  // kFull: no room now (nothing written). `len` parts total must be
  // header.payload_len + VGPU_MSG_HEADER_SIZE.
  Result write(std::span<const std::span<const uint8_t>> parts);
  // Bytes a message needs, including padding to the end of the ring in the
  // worst case; a message larger than this can never be written.
  uint32_t capacity() const { return size_; }
  bool consumer_waiting() const;   // after a full barrier
  void set_producer_waiting(bool waiting);
  // True if the consumer has made room since the last kFull.
  bool has_room(uint32_t record) const;
  // True once the consumer has taken every message written so far.
  bool all_read() const;

 private:
  bool room_for(uint32_t tail, uint32_t need) const;

  vgpu_ring_ctl* ctl_ = nullptr;
  uint8_t* bytes_ = nullptr;
  uint32_t size_ = 0;
  uint32_t head_ = 0;  // private copy of what we published
  bool corrupt_ = false;
};

class RingReader {
 public:
  RingReader() = default;
  RingReader(vgpu_ring_ctl* ctl, uint8_t* bytes, uint32_t size);

  enum class Result { kMessage, kEmpty, kCorrupt };
  // Copies the next message (header + payload) into `out`, so the other side
  // cannot change it while it is decoded, and frees its space.
  Result read(std::vector<uint8_t>* out);
  bool empty() const;
  // Sleep protocol: set, full barrier, then the caller re-checks empty().
  void set_consumer_waiting(bool waiting);
  // Whether to ring a producer that waits for room (after a full barrier):
  // only once at least half the ring is free, so a producer that outruns the
  // consumer is woken once per half ring rather than after every message.
  bool producer_needs_wake() const;

 private:
  vgpu_ring_ctl* ctl_ = nullptr;
  uint8_t* bytes_ = nullptr;
  uint32_t size_ = 0;
  uint32_t tail_ = 0;  // private copy of what we published
  bool corrupt_ = false;
};

}  // namespace vgpu::transport
