#include "vgpu/transport/unix_socket.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace vgpu::transport {
namespace {

bool make_address(const std::string& path, sockaddr_un* addr, std::string* why) {
  std::memset(addr, 0, sizeof *addr);
  addr->sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr->sun_path) {
    *why = "socket path is empty or longer than " + std::to_string(sizeof addr->sun_path - 1) +
           " bytes: " + path;
    return false;
  }
  std::memcpy(addr->sun_path, path.c_str(), path.size());
  return true;
}

}  // namespace

int listen_unix(const std::string& path, std::string* why) {
  sockaddr_un addr;
  if (!make_address(path, &addr, why)) return -1;
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    *why = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  unlink(path.c_str());  // a stale socket from a daemon that died
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, 128) != 0) {
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

bool set_mode_no_follow(const std::string& path, unsigned mode) {
  // glibc does AT_SYMLINK_NOFOLLOW through /proc; without it, check first.
  if (fchmodat(AT_FDCWD, path.c_str(), mode, AT_SYMLINK_NOFOLLOW) == 0) return true;
  if (errno != ENOTSUP && errno != EOPNOTSUPP && errno != ENOSYS) return false;
  struct stat st{};
  if (lstat(path.c_str(), &st) != 0) return false;
  if (S_ISLNK(st.st_mode)) {
    errno = ELOOP;
    return false;
  }
  return chmod(path.c_str(), mode) == 0;
}

bool set_group_no_follow(const std::string& path, int gid) {
  if (gid < 0) return true;
  return fchownat(AT_FDCWD, path.c_str(), static_cast<uid_t>(-1), static_cast<gid_t>(gid),
                  AT_SYMLINK_NOFOLLOW) == 0;
}

int connect_unix(const std::string& path, std::string* why) {
  sockaddr_un addr;
  if (!make_address(path, &addr, why)) return -1;
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *why = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    *why = "cannot reach vgpud at " + path + ": " + std::strerror(errno);
    close(fd);
    return -1;
  }
  return fd;
}

bool send_with_fds(int sock, std::span<const uint8_t> bytes, std::span<const int> fds) {
  iovec iov{const_cast<uint8_t*>(bytes.data()), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 8)];
  if (!fds.empty()) {
    if (fds.size() > 8) return false;
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  ssize_t n;
  do {
    n = sendmsg(sock, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(bytes.size());
}

long recv_with_fds(int sock, std::span<uint8_t> bytes, std::vector<int>* fds, size_t max_fds) {
  iovec iov{bytes.data(), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 8)];
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return -1;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      if (fds && fds->size() < max_fds) {
        fds->push_back(fd);
      } else {
        close(fd);
      }
    }
  }
  return n;
}

}  // namespace vgpu::transport
