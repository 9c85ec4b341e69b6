// HostLoop's private types, shared by host_loop.cpp (the loop, simulated VMs)
// and host_loop_vm.cpp (real VMs over ivshmem).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "vgpu/transport/host_loop.h"

namespace vgpu::transport {

// One channel: a simulated VM's process, or a real VM.
struct HostLoop::Peer {
  std::unique_ptr<HostChannel> channel;
  int sock = -1;  // the hand-over or ivshmem connection (-1: ivshmem-plain)
  std::string vm;
  PeerCredentials creds;  // creds.real_vm: many clients, each in its data-area slot
  bool plain = false;    // nobody rings: the loop polls it
  uint64_t slot_size = 0;
  bool doomed = false;   // to be closed after this pass (its reopening failed)
  bool replies_stuck = false;  // the guest is not reading: its requests wait (counted once)
};

// A real VM vgpud serves.
struct HostLoop::VmServer {
  VmSpec spec;
  int listen_fd = -1;         // kDoorbell
  std::unique_ptr<HostChannel> plain_channel;  // kPlain, until the loop opens it
  uint64_t channel = 0;       // the live channel, 0 when QEMU is not connected
};

namespace loop_tags {
// epoll tags: what kind of descriptor fired.
enum Kind : uint64_t { kListen = 1, kWake, kHello, kClientSocket, kDoorbell, kVmListen };
inline uint64_t tag(Kind k, int fd) {
  return (static_cast<uint64_t>(k) << 32) | static_cast<uint32_t>(fd);
}
inline Kind kind_of(uint64_t t) { return static_cast<Kind>(t >> 32); }
inline int fd_of(uint64_t t) { return static_cast<int>(t & 0xffffffffu); }
}  // namespace loop_tags

bool valid_vm_name(const char* name, size_t cap);

}  // namespace vgpu::transport
