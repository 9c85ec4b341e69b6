#include "vgpu/transport/device_client.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "vgpu/protocol/vm_region.h"
#include "vgpu/protocol/wire_header.h"
#include "vgpu/transport/vgpu_dev.h"

namespace vgpu::transport {
namespace {

constexpr uint64_t kMaxSlot = 1ull << 30;  // more than any region holds: a broken device

class SystemDeviceFile final : public DeviceFile {
 public:
  explicit SystemDeviceFile(int fd) : fd_(fd) {}
  ~SystemDeviceFile() override { close(fd_); }
  int ioctl(unsigned long request, void* arg) override {
    return ::ioctl(fd_, request, arg) == 0 ? 0 : -errno;
  }
  int map(size_t size, void** addr) override {
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (p == MAP_FAILED) return -errno;
    *addr = p;
    return 0;
  }
  void unmap(void* addr, size_t size) override { munmap(addr, size); }

 private:
  int fd_;
};

std::string errno_text(int err) { return std::strerror(err < 0 ? -err : err); }

}  // namespace

std::unique_ptr<DeviceFile> open_device_file(const std::string& path, int* err) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    *err = errno;
    return nullptr;
  }
  return std::make_unique<SystemDeviceFile>(fd);
}

bool DeviceClient::present(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
}

Status DeviceClient::open(const std::string& path, std::unique_ptr<GuestTransport>* out,
                          std::string* why) {
  int err = 0;
  auto file = open_device_file(path, &err);
  if (!file) {
    switch (err) {
      case EBUSY:
        *why = "every process slot of " + path + " is in use (" +
               std::to_string(VGPU_VM_SLOTS) + " CUDA processes per VM at once)";
        return Status::kDevicesUnavailable;
      case EPIPE:
      case ENODEV:
        // A vgpud serving the domain through libvirt plugs a new device in
        // when it starts again (docs/libvirt.md); anywhere else a reboot does.
        *why = "the host closed this VM's vgpu channel (" + path +
               "): programs work again once vgpud is back and plugs the device in again, "
               "or after the VM restarts";
        return Status::kDevicesUnavailable;
      case EHOSTDOWN:
        *why = "vgpud on the host stopped answering (" + path +
               "): programs work again once it answers";
        return Status::kDevicesUnavailable;
      default:
        *why = "cannot open " + path + ": " + errno_text(err);
        return Status::kNoDevice;
    }
  }
  return attach(std::move(file), out, why);
}

Status DeviceClient::attach(std::unique_ptr<DeviceFile> file, std::unique_ptr<GuestTransport>* out,
                            std::string* why) {
  vgpu_dev_info info{};
  if (int r = file->ioctl(VGPU_IOC_INFO, &info); r != 0) {
    *why = "the vgpu device does not answer (" + errno_text(r) + ")";
    return Status::kNoDevice;
  }
  if (info.abi_version != VGPU_DEV_ABI_VERSION || info.max_message != VGPU_MSG_MAX_SIZE) {
    *why = "the vgpu kernel module speaks ABI " + std::to_string(info.abi_version) +
           ", this library " + std::to_string(VGPU_DEV_ABI_VERSION) +
           ": install matching versions";
    return Status::kInsufficientDriver;
  }
  if (info.slot_size == 0 || info.slot_size > kMaxSlot || info.slot_size % 4096 != 0) {
    *why = "the vgpu device reports an unusable data slot";
    return Status::kNoDevice;
  }
  const auto size = static_cast<size_t>(info.slot_size);
  void* slot = nullptr;
  if (int r = file->map(size, &slot); r != 0) {
    *why = "cannot map the vgpu data slot: " + errno_text(r);
    return Status::kNoDevice;
  }
  out->reset(new DeviceClient(std::move(file), static_cast<uint8_t*>(slot), size, info.client,
                              info.flags));
  return Status::kSuccess;
}

DeviceClient::DeviceClient(std::unique_ptr<DeviceFile> file, uint8_t* slot, size_t slot_size,
                           uint32_t client, uint32_t info_flags)
    : file_(std::move(file)),
      slot_(slot),
      slot_size_(slot_size),
      client_(client),
      interrupts_((info_flags & VGPU_DEV_INFO_INTERRUPTS) != 0),
      takes_spin_((info_flags & VGPU_DEV_INFO_RECEIVE_SPIN) != 0),
      submits_nowait_((info_flags & VGPU_DEV_INFO_SUBMIT_NOWAIT) != 0) {
  out_.reserve(VGPU_MSG_MAX_SIZE);
}

DeviceClient::~DeviceClient() { file_->unmap(slot_, slot_size_); }

Status DeviceClient::failed(int err) {
  switch (-err) {
    case EPIPE:   // the host closed the VM's channel
    case ENODEV:  // the device went away
    case EHOSTDOWN:  // the host stopped answering: this file's work is lost even if it returns
    case EIO:     // this file lost replies: nothing it waits for can be trusted
      gone_ = true;
      return Status::kDevicesUnavailable;
    case EINVAL:
    case EFAULT:
      return Status::kInvalidValue;
    default:
      return Status::kUnknown;
  }
}

Status DeviceClient::submit(std::span<const std::span<const uint8_t>> parts, uint32_t flags) {
  if (gone_) return Status::kDevicesUnavailable;
  out_.clear();
  for (const auto& p : parts) {
    if (out_.size() + p.size() > VGPU_MSG_MAX_SIZE) return Status::kInvalidValue;
    out_.insert(out_.end(), p.begin(), p.end());
  }
  vgpu_dev_submit submit{};
  submit.msg = reinterpret_cast<uintptr_t>(out_.data());
  submit.len = static_cast<uint32_t>(out_.size());
  submit.flags = flags;
  for (;;) {
    const int r = file_->ioctl(VGPU_IOC_SUBMIT, &submit);
    if (r == 0) return Status::kSuccess;
    if (r == -EAGAIN && (flags & VGPU_DEV_SUBMIT_NOWAIT)) return Status::kNotReady;
    if (r != -EINTR) return failed(r);  // nothing was written: a signal just retries
  }
}

Status DeviceClient::send(std::span<const std::span<const uint8_t>> parts) {
  return submit(parts, 0);
}

Status DeviceClient::try_send(std::span<const std::span<const uint8_t>> parts) {
  // A module older than NOWAIT waits for room itself, and (as it always
  // did) may wait forever while this process's replies go unread.
  return submit(parts, submits_nowait_ ? VGPU_DEV_SUBMIT_NOWAIT : 0);
}

Status DeviceClient::receive(std::vector<uint8_t>* out, std::chrono::milliseconds timeout) {
  if (gone_) return Status::kDevicesUnavailable;
  out->resize(VGPU_MSG_MAX_SIZE);
  vgpu_dev_receive_spin spin{};
  vgpu_dev_receive& rec = spin.receive;
  rec.buf = reinterpret_cast<uintptr_t>(out->data());
  rec.cap = VGPU_MSG_MAX_SIZE;
  rec.timeout_ms = static_cast<int32_t>(std::min<int64_t>(timeout.count(), INT32_MAX));
  spin.spin_us = static_cast<uint32_t>(
      std::clamp<int64_t>(poll_.count(), 0, VGPU_DEV_MAX_SPIN_US));
  const int r = takes_spin_ ? file_->ioctl(VGPU_IOC_RECEIVE_SPIN, &spin)
                            : file_->ioctl(VGPU_IOC_RECEIVE, &rec);
  if (r == 0 && rec.len >= VGPU_MSG_HEADER_SIZE && rec.len <= VGPU_MSG_MAX_SIZE) {
    out->resize(rec.len);
    return Status::kSuccess;
  }
  out->clear();
  if (r == 0) return Status::kUnknown;  // the module broke its contract
  if (r == -ETIMEDOUT || r == -EAGAIN || r == -EINTR) return Status::kNotReady;
  return failed(r);
}

}  // namespace vgpu::transport
