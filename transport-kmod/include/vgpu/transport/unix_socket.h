// Unix-socket helpers for the hand-over: listening, connecting, and passing
// descriptors with SCM_RIGHTS.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "vgpu/protocol/status.h"

namespace vgpu::transport {

// A SOCK_SEQPACKET listener at `path` (an existing stale socket is replaced),
// mode 0660. Returns the fd or -1 with `why`.
int listen_unix(const std::string& path, std::string* why);
int connect_unix(const std::string& path, std::string* why);

// chmod / chgrp of what a listener just bound at `path`, never through a
// symbolic link put there since (that would change the mode or group of the
// file it points to, as root). gid -1: keep the group. False with errno set.
bool set_mode_no_follow(const std::string& path, unsigned mode);
bool set_group_no_follow(const std::string& path, int gid);

// Sends one message with optional descriptors. Returns false on failure.
bool send_with_fds(int sock, std::span<const uint8_t> bytes, std::span<const int> fds);
// Receives one message of at most `bytes.size()` bytes and up to `max_fds`
// descriptors (any extra are closed). Returns bytes received, 0 on EOF, -1 on error.
long recv_with_fds(int sock, std::span<uint8_t> bytes, std::vector<int>* fds, size_t max_fds);

}  // namespace vgpu::transport
