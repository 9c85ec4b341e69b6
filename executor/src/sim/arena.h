// A context's device memory: one memfd, mapped once in the daemon over the
// context's whole slot (MAP_NORESERVE; the file is only as long as the
// highest live allocation needs, so the rest faults). The worker maps the
// same memfd at the slot's device address.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "vgpu/protocol/status.h"

namespace vgpu::executor::sim {

class Arena {
 public:
  // `span` bytes of address space; the file starts empty.
  static Status create(uint64_t span, const std::string& name, std::unique_ptr<Arena>* out);
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  int fd() const { return fd_; }
  uint64_t span() const { return span_; }
  // The daemon's view of byte `offset` of the slot.
  uint8_t* at(uint64_t offset) const { return base_ + offset; }

  // Sets the file length to `bytes` rounded up to a page: grows to back new
  // allocations, shrinks to give a freed tail back. False on failure
  // (ENOSPC, ENOMEM); the length is then unchanged.
  bool set_length(uint64_t bytes);
  uint64_t length() const { return length_; }

  // Gives back the whole pages inside [offset, offset + size); they read as
  // zeros afterwards.
  void release(uint64_t offset, uint64_t size);

 private:
  Arena(int fd, uint8_t* base, uint64_t span) : fd_(fd), base_(base), span_(span) {}

  const int fd_;
  uint8_t* const base_;
  const uint64_t span_;
  uint64_t length_ = 0;  // guarded by the owning context's mutex
};

}  // namespace vgpu::executor::sim
