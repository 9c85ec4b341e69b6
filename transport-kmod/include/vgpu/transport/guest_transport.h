// What the guest library talks to the host through, whichever way the VM
// reaches it: a simulated VM's channel (GuestChannel: the region mapped
// directly, the ring run in user space) or a real VM's /dev/vgpu
// (DeviceClient: the kernel module runs the ring and stamps the process).
//
// Threads: one thread may send while another receives (the intercept's
// reader waits for a reply without its lock, and other threads send
// meanwhile). Sends are serialised by the caller, and so are receives.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "vgpu/protocol/status.h"

namespace vgpu::transport {

class GuestTransport {
 public:
  virtual ~GuestTransport() = default;

  // This process's data area for bulk bytes; data offsets in requests are
  // relative to its start.
  virtual std::span<uint8_t> data() = 0;
  // Writes one request (header + payload, in parts); waits while the ring is
  // full. kDevicesUnavailable once the host has gone away.
  virtual Status send(std::span<const std::span<const uint8_t>> parts) = 0;
  // Writes one request if there is room for it now; kNotReady (nothing
  // written) when the ring is full. A host whose replies to this process wait
  // unread reads no more of its requests, so a caller that may have replies
  // coming takes them before it tries again (Connection does). By default
  // send(), for a transport whose replies never wait on the host's side.
  virtual Status try_send(std::span<const std::span<const uint8_t>> parts) { return send(parts); }
  // The next reply for this process, waiting up to `timeout`. kNotReady on
  // timeout, kDevicesUnavailable once the host has gone away.
  virtual Status receive(std::vector<uint8_t>* out, std::chrono::milliseconds timeout) = 0;
  // How long receive() polls for a reply before it sleeps until the host rings
  // (through /dev/vgpu the module polls, where its ABI lets it be told). A
  // caller that knows its reply takes a while (a large copy) polls for about
  // that long, and saves the wake-up.
  virtual void set_poll(std::chrono::microseconds poll) { (void)poll; }
  virtual bool daemon_gone() const = 0;
};

}  // namespace vgpu::transport
