// The baseline for the null-call round trip: the same transport primitives
// vgpud uses (a region with its two rings, eventfd doorbells, the hand-over
// socket, poll-then-sleep with the same 50 us window), between two processes,
// with a trivial echo in place of vgpud's decode, validation and dispatch.
//
// The client side is the real guest transport (GuestChannel), as the guest
// library uses it; only the host side is replaced.
#pragma once

#include <sys/types.h>

#include <string>

namespace vgpu::bench {

// Forks a process that serves one client at `socket_path`: it hands over a
// fresh region, then answers every request with a reply of the same opcode
// and id carrying an 8-byte payload (the size of GetDeviceCount's reply),
// until the client hangs up. Returns the child's pid once the socket exists.
pid_t start_bare_echo(const std::string& socket_path);

}  // namespace vgpu::bench
