// vgpu-test-vm's side of a channel: the real hand-over (or, for a real VM's
// ivshmem-plain region, the region file), then direct access to the rings and
// the data area, so the tool can send well-formed requests, read replies, and
// also write whatever bytes and indices it likes.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "vgpu/transport/doorbell.h"
#include "vgpu/transport/region.h"
#include "vgpu/transport/ring.h"

namespace vgpu::testvm {

class Channel {
 public:
  // A simulated VM named `vm` through the daemon's hand-over socket.
  static std::unique_ptr<Channel> connect(const std::string& socket_path, const std::string& vm,
                                          std::string* why);
  // A real VM's ivshmem-plain region file (no doorbells: both sides poll).
  static std::unique_ptr<Channel> attach_file(const std::string& path, std::string* why);
  ~Channel();

  vgpu_region_header* header() { return region_->header(); }
  uint8_t* request_ring() { return region_->req_ring(); }
  uint32_t ring_size() const { return region_->geometry().ring_size; }
  std::span<uint8_t> data() { return region_->data(); }

  // A well-framed message into the request ring; false while it is full.
  bool try_send(std::span<const uint8_t> message);
  // Sends, waiting (ringing, sleeping) while the ring is full, up to `limit`.
  bool send(std::span<const uint8_t> message, std::chrono::milliseconds limit);
  // The next reply if one is there.
  transport::RingReader::Result try_receive(std::vector<uint8_t>* out);
  // Waits up to `limit` for a reply; false on timeout or when the host is gone.
  bool receive(std::vector<uint8_t>* out, std::chrono::milliseconds limit);

  // Raw access for attacks: the request ring's published head, written as is.
  uint32_t request_head() const;
  void publish_request_head(uint32_t head);
  void ring_host();
  // The host closed this channel (host_state CLOSED, or the hand-over socket hung up).
  bool host_gone();

 private:
  Channel(int sock, std::unique_ptr<transport::Region> region, transport::Doorbell host_bell,
          transport::Doorbell own_bell);
  void nap();

  int sock_ = -1;
  std::unique_ptr<transport::Region> region_;
  transport::Doorbell host_bell_, own_bell_;  // invalid for a plain region
  transport::RingWriter requests_;
  transport::RingReader replies_;
};

}  // namespace vgpu::testvm
