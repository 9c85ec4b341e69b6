#include "vgpu/transport/region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace vgpu::transport {

bool RegionGeometry::valid() const {
  const bool pow2 = ring_size != 0 && (ring_size & (ring_size - 1)) == 0;
  return pow2 && ring_size >= 2 * VGPU_MSG_MAX_SIZE && ring_size <= (1u << 30) &&
         data_size % 4096 == 0 && data_size <= (64ull << 30);
}

RegionGeometry RegionGeometry::for_vm(uint64_t region_size, uint32_t ring_size) {
  RegionGeometry g;
  g.ring_size = ring_size;
  const uint64_t fixed = VGPU_REGION_HEADER_SIZE + 2ull * ring_size;
  g.data_size = region_size > fixed ? region_size - fixed : 0;
  return g;
}

Status Region::create(const RegionGeometry& g, std::unique_ptr<Region>* out) {
  if (!g.valid()) return Status::kInvalidValue;
  const int fd = memfd_create("vgpu-region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return Status::kMemoryAllocation;
  // The size is sealed so a guest cannot shrink the file under the host's mapping.
  if (ftruncate(fd, static_cast<off_t>(g.region_size())) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    close(fd);
    return Status::kMemoryAllocation;
  }
  return init(fd, g, out);
}

Status Region::create_file(const std::string& path, const RegionGeometry& g,
                           std::unique_ptr<Region>* out, std::string* why) {
  if (!g.valid()) {
    *why = "invalid region geometry";
    return Status::kInvalidValue;
  }
  // A new inode: a QEMU still mapping an old file keeps it (truncating a
  // mapped file would fault that QEMU).
  unlink(path.c_str());
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0660);
  if (fd < 0) {
    *why = "cannot create " + path + ": " + std::strerror(errno);
    return Status::kNotPermitted;
  }
  if (ftruncate(fd, static_cast<off_t>(g.region_size())) != 0) {
    *why = "cannot size " + path + ": " + std::strerror(errno);
    close(fd);
    unlink(path.c_str());
    return Status::kMemoryAllocation;
  }
  if (Status s = init(fd, g, out); !ok(s)) {
    *why = "cannot map " + path;
    unlink(path.c_str());
    return s;
  }
  return Status::kSuccess;
}

Status Region::init(int fd, const RegionGeometry& g, std::unique_ptr<Region>* out) {
  void* base = mmap(nullptr, g.region_size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    close(fd);
    return Status::kMemoryAllocation;
  }
  auto* h = static_cast<vgpu_region_header*>(base);
  std::memset(h, 0, sizeof *h);
  h->version = VGPU_REGION_VERSION;
  h->region_size = g.region_size();
  h->ring_size = g.ring_size;
  h->max_message = VGPU_MSG_MAX_SIZE;
  h->req_ring_offset = g.req_ring_offset();
  h->resp_ring_offset = g.resp_ring_offset();
  h->data_offset = g.data_offset();
  h->data_size = g.data_size;
  h->host_state = VGPU_HOST_READY;
  // The magic goes last: a guest that sees it sees a complete header.
  std::atomic_ref<uint32_t>(h->magic).store(VGPU_REGION_MAGIC, std::memory_order_release);
  out->reset(new Region(fd, static_cast<uint8_t*>(base), g));
  return Status::kSuccess;
}

Status Region::attach(int fd, std::unique_ptr<Region>* out, std::string* why) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(VGPU_REGION_HEADER_SIZE)) {
    close(fd);
    *why = "the region descriptor is not a usable shared-memory file";
    return Status::kInitializationError;
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    close(fd);
    *why = "cannot map the shared-memory region";
    return Status::kInitializationError;
  }
  const auto* h = static_cast<const vgpu_region_header*>(base);
  RegionGeometry g;
  g.ring_size = h->ring_size;
  g.data_size = h->data_size;
  const bool ok = h->magic == VGPU_REGION_MAGIC && h->version == VGPU_REGION_VERSION &&
                  g.valid() && h->region_size == size && g.region_size() == size &&
                  h->req_ring_offset == g.req_ring_offset() &&
                  h->resp_ring_offset == g.resp_ring_offset() &&
                  h->data_offset == g.data_offset() && h->max_message == VGPU_MSG_MAX_SIZE;
  if (!ok) {
    munmap(base, size);
    close(fd);
    *why = "the shared-memory region has an unknown layout (daemon and library versions differ?)";
    return Status::kInsufficientDriver;
  }
  out->reset(new Region(fd, static_cast<uint8_t*>(base), g));
  return Status::kSuccess;
}

Region::~Region() {
  munmap(base_, geometry_.region_size());
  close(fd_);
}

}  // namespace vgpu::transport
