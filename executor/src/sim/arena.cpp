#include "arena.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

namespace vgpu::executor::sim {
namespace {

uint64_t page_size() {
  static const uint64_t size = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return size;
}

uint64_t round_up(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

}  // namespace

Status Arena::create(uint64_t span, const std::string& name, std::unique_ptr<Arena>* out) {
  const int fd = memfd_create(name.c_str(), MFD_CLOEXEC);
  if (fd < 0) {
    spdlog::error("sim: memfd_create: {}", std::strerror(errno));
    return Status::kMemoryAllocation;
  }
  void* base = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  if (base == MAP_FAILED) {
    spdlog::error("sim: mapping a {} byte arena: {}", span, std::strerror(errno));
    close(fd);
    return Status::kMemoryAllocation;
  }
  out->reset(new Arena(fd, static_cast<uint8_t*>(base), span));
  return Status::kSuccess;
}

Arena::~Arena() {
  munmap(base_, span_);
  close(fd_);
}

bool Arena::set_length(uint64_t bytes) {
  const uint64_t length = round_up(bytes, page_size());
  if (length == length_) return true;
  if (length > span_) return false;
  if (ftruncate(fd_, static_cast<off_t>(length)) != 0) {
    spdlog::warn("sim: arena ftruncate to {} bytes: {}", length, std::strerror(errno));
    return false;
  }
  length_ = length;
  return true;
}

void Arena::release(uint64_t offset, uint64_t size) {
  const uint64_t begin = round_up(offset, page_size());
  const uint64_t end = (offset + size) / page_size() * page_size();
  if (end <= begin || begin >= length_) return;
  const uint64_t len = (end < length_ ? end : length_) - begin;
  if (fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(begin),
                static_cast<off_t>(len)) != 0) {
    // Not fatal: the pages stay resident until the context goes away.
    spdlog::debug("sim: arena punch hole: {}", std::strerror(errno));
  }
}

}  // namespace vgpu::executor::sim
