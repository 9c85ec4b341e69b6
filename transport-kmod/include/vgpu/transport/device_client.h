// The guest library's transport in a real VM: /dev/vgpu, the kernel module's
// device (vgpu_dev.h). The module runs the ring, stamps every request with
// this process's client id and routes back only this process's replies; the
// process's slot of the data area is mapped here, so bulk bytes need no copy.
//
// The system calls go through DeviceFile, so tests can drive the client
// without a kernel.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "vgpu/transport/doorbell.h"
#include "vgpu/transport/guest_transport.h"

namespace vgpu::transport {

// The device as DeviceClient uses it. Each call returns 0 or -errno.
class DeviceFile {
 public:
  virtual ~DeviceFile() = default;
  virtual int ioctl(unsigned long request, void* arg) = 0;
  virtual int map(size_t size, void** addr) = 0;  // MAP_SHARED, offset 0
  virtual void unmap(void* addr, size_t size) = 0;
};

// /dev/vgpu (or `path`) opened read-write; nullptr with `*err` = errno.
std::unique_ptr<DeviceFile> open_device_file(const std::string& path, int* err);

class DeviceClient final : public GuestTransport {
 public:
  // True if the device node exists: the process runs in a real VM.
  static bool present(const std::string& path);
  static Status open(const std::string& path, std::unique_ptr<GuestTransport>* out,
                     std::string* why);
  // Over an already opened device (tests pass a fake).
  static Status attach(std::unique_ptr<DeviceFile> file, std::unique_ptr<GuestTransport>* out,
                       std::string* why);
  ~DeviceClient() override;

  std::span<uint8_t> data() override { return {slot_, slot_size_}; }
  Status send(std::span<const std::span<const uint8_t>> parts) override;
  // kNotReady while the ring is full, where the module can say so
  // (VGPU_DEV_INFO_SUBMIT_NOWAIT); an older module waits, as send() does.
  Status try_send(std::span<const std::span<const uint8_t>> parts) override;
  Status receive(std::vector<uint8_t>* out, std::chrono::milliseconds timeout) override;
  // Passed to the module with each receive when it takes it
  // (VGPU_DEV_INFO_RECEIVE_SPIN), capped at VGPU_DEV_MAX_SPIN_US; an older
  // module polls its own 50 us.
  void set_poll(std::chrono::microseconds poll) override { poll_ = poll; }
  bool daemon_gone() const override { return gone_; }

  uint32_t client() const { return client_; }
  bool interrupts() const { return interrupts_; }
  bool takes_spin() const { return takes_spin_; }
  bool submits_nowait() const { return submits_nowait_; }

 private:
  DeviceClient(std::unique_ptr<DeviceFile> file, uint8_t* slot, size_t slot_size, uint32_t client,
               uint32_t info_flags);
  // One VGPU_IOC_SUBMIT of the gathered parts with `flags`.
  Status submit(std::span<const std::span<const uint8_t>> parts, uint32_t flags);
  // Maps an errno from the device to a status; remembers a host that is gone.
  Status failed(int err);

  std::unique_ptr<DeviceFile> file_;
  uint8_t* slot_;
  size_t slot_size_;
  uint32_t client_;
  bool interrupts_;
  bool takes_spin_;  // the module has VGPU_IOC_RECEIVE_SPIN
  bool submits_nowait_;  // the module takes VGPU_DEV_SUBMIT_NOWAIT
  std::chrono::microseconds poll_ = kPollBeforeSleep;  // the receiver's; the module's own default too
  std::atomic<bool> gone_ = false;  // set by the sender or the receiver
  std::vector<uint8_t> out_;  // the sender's: one request, gathered from its parts
};

}  // namespace vgpu::transport
