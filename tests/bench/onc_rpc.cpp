#include "onc_rpc.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <rpc/rpc.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

namespace vgpu::bench {
namespace {

constexpr rpcprog_t kProgram = 0x20000099;  // the user-defined range
constexpr rpcvers_t kVersion = 1;

// xdr_void as the xdrproc_t the calls take (through void (*)(), the type
// that may be cast to any function type).
xdrproc_t xdr_nothing() { return reinterpret_cast<xdrproc_t>(reinterpret_cast<void (*)()>(xdr_void)); }

void dispatch(svc_req* request, SVCXPRT* xprt) {
  if (request->rq_proc == NULLPROC) {
    svc_sendreply(xprt, xdr_nothing(), nullptr);
  } else {
    svcerr_noproc(xprt);
  }
}

double now_ns() {
  return std::chrono::duration<double, std::nano>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

pid_t start_rpc_server(uint16_t* port) {
  const int sock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (sock < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(sock, 8) != 0 ||
      getsockname(sock, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(sock);
    return -1;
  }
  *port = ntohs(addr.sin_port);
  const pid_t pid = fork();
  if (pid == 0) {
    SVCXPRT* xprt = svctcp_create(sock, 0, 0);
    if (!xprt || !svc_register(xprt, kProgram, kVersion, dispatch, 0)) _exit(1);
    svc_run();
    _exit(0);
  }
  close(sock);
  return pid;
}

bool time_rpc_null(uint16_t port, long warmup, long calls, std::vector<double>* samples) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int sock = RPC_ANYSOCK;
  CLIENT* client = clnttcp_create(&addr, kProgram, kVersion, &sock, 0, 0);
  if (!client) return false;
  // What an RPC user would set for small calls (libtirpc does not).
  const int one = 1;
  setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  const timeval timeout{5, 0};
  auto call = [&] {
    return clnt_call(client, NULLPROC, xdr_nothing(), nullptr, xdr_nothing(), nullptr, timeout) ==
           RPC_SUCCESS;
  };
  bool ok = true;
  for (long i = 0; i < warmup && ok; ++i) ok = call();
  for (long i = 0; i < calls && ok; ++i) {
    const double t0 = now_ns();
    ok = call();
    samples->push_back(now_ns() - t0);
  }
  clnt_destroy(client);
  return ok;
}

}  // namespace vgpu::bench
