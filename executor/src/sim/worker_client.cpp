#include "worker_client.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "engine_clock.h"

extern char** environ;

namespace vgpu::executor::sim {
namespace {

constexpr int kHighFd = 10;  // inherited fds are moved here before dup2 to 3/4

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) {
    const char* name = sigabbrev_np(WTERMSIG(status));
    return std::string("killed by SIG") + (name ? name : std::to_string(WTERMSIG(status)).c_str());
  }
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "ended (status " + std::to_string(status) + ")";
}

struct SpawnArgs {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  SpawnArgs() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
  }
  ~SpawnArgs() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
};

}  // namespace

Status Worker::start(const WorkerSpec& spec, int memfd, uint64_t base, uint64_t span,
                     std::chrono::milliseconds limit, std::unique_ptr<Worker>* out,
                     std::string* error) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    *error = std::string("socketpair: ") + std::strerror(errno);
    return Status::kInitializationError;
  }
  // Move the child's ends above 3/4 so dup2 onto 3/4 cannot clobber one with
  // the other and always clears FD_CLOEXEC.
  const int child_sock = fcntl(sv[1], F_DUPFD_CLOEXEC, kHighFd);
  close(sv[1]);
  const int child_mem = memfd >= 0 ? fcntl(memfd, F_DUPFD_CLOEXEC, kHighFd) : -1;
  if (child_sock < 0 || (memfd >= 0 && child_mem < 0)) {
    *error = std::string("fcntl(F_DUPFD): ") + std::strerror(errno);
    if (child_sock >= 0) close(child_sock);
    close(sv[0]);
    return Status::kInitializationError;
  }

  SpawnArgs args;
  posix_spawn_file_actions_adddup2(&args.actions, child_sock, wire::kSocketFd);
  if (child_mem >= 0) posix_spawn_file_actions_adddup2(&args.actions, child_mem, wire::kMemFd);
  posix_spawn_file_actions_addopen(&args.actions, 0, "/dev/null", O_RDONLY, 0);
  // Nothing else of the daemon's (other tenants' memfds, rings) reaches it.
  posix_spawn_file_actions_addclosefrom_np(&args.actions,
                                           (child_mem >= 0 ? wire::kMemFd : wire::kSocketFd) + 1);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&args.attr, &none);
  posix_spawnattr_setsigdefault(&args.attr, &all);
  // Its own process group: a Ctrl-C meant for the daemon does not fault
  // contexts mid-shutdown. It still ends with the daemon (its socket closes).
  posix_spawnattr_setpgroup(&args.attr, 0);
  posix_spawnattr_setflags(&args.attr,
                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);

  std::vector<std::string> argv_s{spec.path};
  if (memfd >= 0) {
    argv_s.insert(argv_s.end(),
                  {"run", hex(base), hex(span), std::to_string(spec.interpreter_threads)});
  } else {
    argv_s.emplace_back("check");
  }
  argv_s.insert(argv_s.end(), spec.plugins.begin(), spec.plugins.end());
  std::vector<char*> argv;
  for (std::string& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);

  pid_t pid = -1;
  const int rc = posix_spawn(&pid, spec.path.c_str(), &args.actions, &args.attr, argv.data(),
                             environ);
  close(child_sock);
  if (child_mem >= 0) close(child_mem);
  if (rc != 0) {
    *error = "cannot start " + spec.path + ": " + std::strerror(rc);
    close(sv[0]);
    return Status::kInitializationError;
  }

  std::unique_ptr<Worker> worker(new Worker(pid, sv[0]));
  wire::Ready ready;
  const uint64_t deadline = engine_now_ns() + static_cast<uint64_t>(limit.count()) * 1'000'000ull;
  const ssize_t n = worker->receive(&ready, sizeof ready, deadline);
  if (n != static_cast<ssize_t>(sizeof ready) || ready.op != wire::Op::kReady) {
    const std::string how = worker->kill_and_reap();
    *error = n == -1 ? spec.path + " did not report within " + std::to_string(limit.count()) + " ms"
                     : spec.path + " failed to start (" + how + ")";
    return Status::kInitializationError;
  }
  if (ready.version != wire::kVersion) {
    worker->kill_and_reap();
    *error = spec.path + " speaks protocol version " + std::to_string(ready.version) +
             ", expected " + std::to_string(wire::kVersion);
    return Status::kInitializationError;
  }
  if (ready.ok != 1) {
    ready.message[sizeof ready.message - 1] = '\0';
    worker->kill_and_reap();
    *error = ready.message;
    return Status::kInitializationError;
  }
  *out = std::move(worker);
  return Status::kSuccess;
}

Worker::~Worker() {
  kill_and_reap();
  close(fd_);
}

std::string Worker::kill_and_reap() {
  if (reaped_) return "gone";
  reaped_ = true;
  // A worker that already exited is a zombie until reaped: the signal is
  // harmless and waitpid reports how it really ended.
  kill(pid_, SIGKILL);
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &status, 0);
  } while (r < 0 && errno == EINTR);
  if (r != pid_) return "not reapable";
  return describe_exit(status);
}

bool Worker::send_all(const void* data, size_t size) {
  if (reaped_) return false;
  ssize_t n;
  do {
    n = send(fd_, data, size, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(size);
}

ssize_t Worker::receive(void* buf, size_t size, uint64_t deadline_ns) {
  for (;;) {
    const uint64_t now = engine_now_ns();
    if (now >= deadline_ns) return -1;
    const uint64_t left_ms = (deadline_ns - now + 999'999) / 1'000'000;
    pollfd p{fd_, POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(left_ms > 60'000 ? 60'000 : left_ms));
    if (r < 0 && errno != EINTR) return -2;
    if (r <= 0) continue;
    const ssize_t n = recv(fd_, buf, size, MSG_TRUNC);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -2;
    return n;  // with MSG_TRUNC, an oversized packet shows as n > size
  }
}

bool Worker::send_symbols(const std::vector<WorkerSymbol>& symbols) {
  wire::SymbolsReset reset;
  if (!send_all(&reset, sizeof reset)) return false;
  std::vector<uint8_t> buf;
  for (const WorkerSymbol& s : symbols) {
    if (s.name.size() > wire::kMaxNameBytes) continue;
    wire::Symbol h;
    h.name_bytes = static_cast<uint32_t>(s.name.size());
    h.module = s.module;
    h.address = s.address;
    h.size = s.size;
    buf.resize(sizeof h + s.name.size());
    std::memcpy(buf.data(), &h, sizeof h);
    std::memcpy(buf.data() + sizeof h, s.name.data(), s.name.size());
    if (!send_all(buf.data(), buf.size())) return false;
  }
  return true;
}

bool Worker::send_textures(const std::vector<wire::Texture>& textures) {
  wire::TexturesReset reset;
  if (!send_all(&reset, sizeof reset)) return false;
  for (const wire::Texture& t : textures) {
    if (!send_all(&t, sizeof t)) return false;
  }
  return true;
}

bool Worker::send_ptx(uint64_t module, const std::string& text) {
  std::vector<uint8_t> buf;
  uint64_t offset = 0;
  do {  // an empty text is one empty chunk
    const size_t chunk = std::min<size_t>(text.size() - offset, wire::kMaxPtxChunk);
    wire::PtxChunk h;
    h.bytes = static_cast<uint32_t>(chunk);
    h.module = module;
    h.offset = offset;
    h.total = text.size();
    buf.resize(sizeof h + chunk);
    std::memcpy(buf.data(), &h, sizeof h);
    if (chunk) std::memcpy(buf.data() + sizeof h, text.data() + offset, chunk);
    if (!send_all(buf.data(), buf.size())) return false;
    offset += chunk;
  } while (offset < text.size());
  return true;
}

void LaunchPacket::clear(const wire::LaunchBatch& head) {
  bytes_.resize(sizeof head);
  std::memcpy(bytes_.data(), &head, sizeof head);
  count_ = 0;
}

bool LaunchPacket::add(const wire::Launch& head, std::string_view kernel,
                       std::span<const uint8_t> params) {
  const size_t record = wire::record_bytes(kernel.size(), params.size());
  if (count_ == wire::kMaxBatch || bytes_.size() + record > wire::kMaxMessageBytes) return false;
  const size_t at = bytes_.size();
  bytes_.resize(at + record, 0);
  wire::Launch h = head;
  h.name_bytes = static_cast<uint32_t>(kernel.size());
  h.params_bytes = static_cast<uint32_t>(params.size());
  std::memcpy(bytes_.data() + at, &h, sizeof h);
  std::memcpy(bytes_.data() + at + sizeof h, kernel.data(), kernel.size());
  if (!params.empty()) std::memcpy(bytes_.data() + at + sizeof h + kernel.size(), params.data(), params.size());
  ++count_;
  wire::LaunchBatch b;
  std::memcpy(&b, bytes_.data(), sizeof b);
  b.count = count_;
  std::memcpy(bytes_.data(), &b, sizeof b);
  return true;
}

void Worker::run(const LaunchPacket& packet, uint64_t deadline_ns, WorkerReply* reply) {
  reply->kind = WorkerReply::Kind::kDied;
  reply->done.clear();
  reply->faulted = false;
  reply->detail.clear();
  reply->printed.clear();
  reply->errors.clear();
  if (!send_all(packet.bytes().data(), packet.bytes().size())) {
    reply->detail = kill_and_reap();
    return;
  }
  static_assert(wire::kMaxBatchDoneBytes <= wire::kMaxMessageBytes);
  std::vector<uint8_t>& buf = receive_buffer_;
  buf.resize(wire::kMaxMessageBytes);
  for (;;) {
    const ssize_t n = receive(buf.data(), buf.size(), deadline_ns);
    if (n == -1) {
      kill_and_reap();
      reply->kind = WorkerReply::Kind::kTimeout;
      return;
    }
    wire::Op op{};
    if (n >= static_cast<ssize_t>(sizeof op)) std::memcpy(&op, buf.data(), sizeof op);
    if (op == wire::Op::kPrintf && n >= static_cast<ssize_t>(sizeof(wire::Printf))) {
      wire::Printf head;
      std::memcpy(&head, buf.data(), sizeof head);
      std::string& to = head.stream == 2 ? reply->errors : reply->printed;
      if (static_cast<size_t>(n) == sizeof head + head.bytes && (head.stream == 1 || head.stream == 2) &&
          reply->printed.size() + reply->errors.size() + head.bytes <= wire::kMaxPrintfPerBatch) {
        to.append(reinterpret_cast<const char*>(buf.data()) + sizeof head, head.bytes);
        continue;
      }
    } else if (op == wire::Op::kBatchDone && n >= static_cast<ssize_t>(sizeof(wire::BatchDone)) &&
               static_cast<size_t>(n) <= wire::kMaxBatchDoneBytes) {
      wire::BatchDone head;
      std::memcpy(&head, buf.data(), sizeof head);
      // It reports only launches it was sent, one record each, and at least
      // one unless it is dying of a fault.
      const bool fits = head.count <= packet.count() &&
                        static_cast<size_t>(n) == sizeof head + head.count * sizeof(wire::LaunchDone);
      if (fits && (head.count > 0 || head.final == 0) && reply->done.empty()) {
        reply->done.resize(head.count);
        if (head.count > 0) {
          std::memcpy(reply->done.data(), buf.data() + sizeof head, head.count * sizeof(wire::LaunchDone));
        }
        if (head.final != 0) {
          reply->kind = WorkerReply::Kind::kDone;
          return;
        }
        continue;  // a Fault follows
      }
    } else if (op == wire::Op::kFault && n == static_cast<ssize_t>(sizeof(wire::Fault)) &&
               reply->done.size() < packet.count()) {
      wire::Fault f;
      std::memcpy(&f, buf.data(), sizeof f);
      kill_and_reap();  // it is dying of the signal anyway
      const char* name = sigabbrev_np(f.signal);
      reply->faulted = true;
      reply->detail = std::string("SIG") + (name ? name : std::to_string(f.signal).c_str()) +
                      " at " + hex(f.address);
      return;
    }
    reply->done.clear();
    reply->detail = (n > 0 ? "broke the protocol, " : "") + kill_and_reap();
    return;
  }
}

}  // namespace vgpu::executor::sim
