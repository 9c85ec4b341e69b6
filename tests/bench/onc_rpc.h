// The second baseline for the null-call round trip: an ONC RPC null procedure
// (procedure 0, no arguments, no result) over loopback TCP with libtirpc, the
// transport an established GPU-remoting project forwards CUDA calls over.
// No portmapper: the client is told the server's port.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <vector>

namespace vgpu::bench {

// Forks a server listening on 127.0.0.1 and returns its pid and port.
pid_t start_rpc_server(uint16_t* port);

// Calls the null procedure `warmup` times, then `calls` times, timing each
// call (ns) into `samples`. False if the client cannot connect or a call fails.
bool time_rpc_null(uint16_t port, long warmup, long calls, std::vector<double>* samples);

}  // namespace vgpu::bench
