#include "vgpu/transport/ivshmem_server.h"

#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "vgpu/protocol/vm_region.h"
#include "vgpu/transport/unix_socket.h"

namespace vgpu::transport {

int listen_unix_stream(const std::string& path, std::string* why) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path) {
    *why = "socket path is empty or longer than " + std::to_string(sizeof addr.sun_path - 1) +
           " bytes: " + path;
    return -1;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size());
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    *why = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  unlink(path.c_str());  // a stale socket from a daemon that died
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, 8) != 0) {
    *why = "cannot listen on " + path + ": " + std::strerror(errno);
    close(fd);
    return -1;
  }
  if (!set_mode_no_follow(path, 0660)) {
    *why = "cannot set the mode of " + path + ": " + std::strerror(errno);
    close(fd);
    return -1;
  }
  return fd;
}

bool ivshmem_send(int sock, int64_t value, int fd) {
  // The wire is little-endian; so is every host vgpud runs on (x86-64, arm64).
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "ivshmem messages are little-endian");
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(&value), sizeof value);
  if (fd < 0) return send_with_fds(sock, bytes, {});
  const int fds[1] = {fd};
  return send_with_fds(sock, bytes, fds);
}

Status ivshmem_send_setup(int sock, const IvshmemSetup& s) {
  if (s.shm_fd < 0 || s.peer_vectors.empty() || s.own_vectors.empty() || s.own_id == s.peer_id)
    return Status::kInvalidValue;
  bool ok = ivshmem_send(sock, VGPU_IVSHMEM_PROTOCOL) && ivshmem_send(sock, s.own_id) &&
            ivshmem_send(sock, -1, s.shm_fd);
  const auto send_vectors = [&](int64_t id, std::span<const int> fds) {
    for (const int fd : fds) ok = ok && ivshmem_send(sock, id, fd);
  };
  if (!s.replug) {
    send_vectors(s.peer_id, s.peer_vectors);
    send_vectors(s.own_id, s.own_vectors);
  } else {
    // Half the spares before the client's own vectors and half after, so the
    // stale number is covered whether the device unplugged had the usual
    // layout (a boot) or this one (a replug before).
    int64_t spare_id = std::max(s.own_id, s.peer_id) + 1;
    const auto send_spares = [&](int n) {
      for (int i = 0; ok && i < n; ++i) {
        const int spare = eventfd(0, EFD_CLOEXEC);
        ok = spare >= 0 && ivshmem_send(sock, spare_id++, spare);
        if (spare >= 0) close(spare);  // the client's copy is the one that counts
      }
    };
    send_spares(kReplugSparePeers / 2);
    send_vectors(s.own_id, s.own_vectors);
    send_spares(kReplugSparePeers - kReplugSparePeers / 2);
    send_vectors(s.peer_id, s.peer_vectors);
  }
  return ok ? Status::kSuccess : Status::kDevicesUnavailable;
}

}  // namespace vgpu::transport
