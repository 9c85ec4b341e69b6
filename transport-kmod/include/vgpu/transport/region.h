// A shared-memory region (protocol/region.h) as a mapped object.
//
// The host creates it (a sealed-size memfd) and keeps its own copy of the
// geometry, which it never re-reads from shared memory. A guest attaches to a
// descriptor it was handed and validates the header before using it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "vgpu/protocol/region.h"
#include "vgpu/protocol/status.h"

namespace vgpu::transport {

struct RegionGeometry {
  uint32_t ring_size = 1u << 20;   // bytes per ring, a power of two
  uint64_t data_size = 64ull << 20;  // bytes in the data area

  uint64_t req_ring_offset() const { return VGPU_REGION_HEADER_SIZE; }
  uint64_t resp_ring_offset() const { return req_ring_offset() + ring_size; }
  uint64_t data_offset() const { return resp_ring_offset() + ring_size; }
  uint64_t region_size() const { return data_offset() + data_size; }
  // Ring sizes a region may have: a power of two holding two largest messages.
  bool valid() const;
  // A real VM's region: `region_size` in all (a power of two, as a PCI BAR
  // must be), rings of `ring_size`, the rest data area. Not valid() if too small.
  static RegionGeometry for_vm(uint64_t region_size, uint32_t ring_size = 1u << 20);
};

class Region {
 public:
  // Host: a new region in a memfd, header initialised, host_state READY.
  static Status create(const RegionGeometry& geometry, std::unique_ptr<Region>* out);
  // Host: the same in a file at `path` (replaced if it exists), for a QEMU
  // that maps it by path (ivshmem-plain's memory-backend-file). Its size
  // cannot be sealed: see docs/kernel-module.md.
  static Status create_file(const std::string& path, const RegionGeometry& geometry,
                            std::unique_ptr<Region>* out, std::string* why);
  // Guest: maps the region behind `fd` (takes ownership of fd) and checks its header.
  static Status attach(int fd, std::unique_ptr<Region>* out, std::string* why);

  ~Region();
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

  int fd() const { return fd_; }
  const RegionGeometry& geometry() const { return geometry_; }
  vgpu_region_header* header() { return reinterpret_cast<vgpu_region_header*>(base_); }
  uint8_t* req_ring() { return base_ + geometry_.req_ring_offset(); }
  uint8_t* resp_ring() { return base_ + geometry_.resp_ring_offset(); }
  std::span<uint8_t> data() { return {base_ + geometry_.data_offset(), geometry_.data_size}; }

 private:
  Region(int fd, uint8_t* base, const RegionGeometry& g) : fd_(fd), base_(base), geometry_(g) {}
  static Status init(int fd, const RegionGeometry& g, std::unique_ptr<Region>* out);

  int fd_;
  uint8_t* base_;
  RegionGeometry geometry_;
};

}  // namespace vgpu::transport
