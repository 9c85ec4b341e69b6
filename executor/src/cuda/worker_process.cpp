#include "worker_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "staging_transfer.h"

extern char** environ;

namespace vgpu::executor::cuda {
namespace {

constexpr int kHighFd = 10;  // the child's ends are moved here before dup2 onto 3..5

struct Fd {  // closes on scope exit unless released
  int fd = -1;
  explicit Fd(int f = -1) : fd(f) {}
  ~Fd() {
    if (fd >= 0) close(fd);
  }
  Fd(Fd&& o) noexcept : fd(o.release()) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int release() { return std::exchange(fd, -1); }
  void reset() {
    if (fd >= 0) close(fd);
    fd = -1;
  }
};

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

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// Starts the worker with `fds[i]` as its fd 3 + i (nothing else of the daemon's:
// not other tenants' regions, not the rings), and `outputs`, if given, as its
// stdout and stderr.
bool spawn(const WorkerSpec& spec, const std::vector<std::string>& args, const std::vector<int>& fds,
           const int* outputs, pid_t* pid, std::string* why) {
  std::vector<Fd> high;
  std::vector<int> wanted = fds;
  if (outputs) wanted.insert(wanted.end(), {outputs[0], outputs[1]});
  for (int fd : wanted) {
    high.emplace_back(fcntl(fd, F_DUPFD_CLOEXEC, kHighFd));
    if (high.back().fd < 0) {
      *why = errno_text("fcntl(F_DUPFD)");
      return false;
    }
  }
  SpawnArgs sa;
  for (size_t i = 0; i < fds.size(); ++i) {
    posix_spawn_file_actions_adddup2(&sa.actions, high[i].fd, wire::kControlFd + static_cast<int>(i));
  }
  if (outputs) {
    posix_spawn_file_actions_adddup2(&sa.actions, high[fds.size()].fd, STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&sa.actions, high[fds.size() + 1].fd, STDERR_FILENO);
  }
  posix_spawn_file_actions_addopen(&sa.actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addclosefrom_np(&sa.actions, wire::kControlFd + static_cast<int>(fds.size()));
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&sa.attr, &none);
  posix_spawnattr_setsigdefault(&sa.attr, &all);
  // Its own process group: a Ctrl-C meant for the daemon does not end
  // contexts mid-shutdown. It still ends with the daemon (PDEATHSIG, EOF).
  posix_spawnattr_setpgroup(&sa.attr, 0);
  posix_spawnattr_setflags(&sa.attr,
                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  std::vector<std::string> argv_s{spec.path};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  const int rc = posix_spawn(pid, spec.path.c_str(), &sa.actions, &sa.attr, argv.data(), environ);
  if (rc != 0) {
    *why = "cannot start " + spec.path + ": " + std::strerror(rc);
    return false;
  }
  return true;
}

bool socket_pair(int* ours, int* theirs, std::string* why) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    *why = errno_text("socketpair");
    return false;
  }
  *ours = sv[0];
  *theirs = sv[1];
  return true;
}

// One packet from fd before the deadline: >0 bytes, 0 at EOF, -1 on timeout, -2 on error.
ssize_t receive_packet(int fd, void* buf, size_t size, uint64_t deadline_ns) {
  for (;;) {
    const uint64_t now = monotonic_ns();
    if (now >= deadline_ns) return -1;
    const uint64_t left = deadline_ns - now;
    timespec ts{static_cast<time_t>(left / 1'000'000'000ull), static_cast<long>(left % 1'000'000'000ull)};
    pollfd pfd{fd, POLLIN, 0};
    const int p = ppoll(&pfd, 1, &ts, nullptr);
    if (p < 0 && errno == EINTR) continue;
    if (p < 0) return -2;
    if (p == 0) continue;  // re-checks the deadline
    const ssize_t n = recv(fd, buf, size, MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    return n < 0 ? -2 : n;
  }
}

Status status_for_start(const wire::Ready& ready) {
  switch (static_cast<LoadError>(ready.load_error)) {
    case LoadError::kNoLibrary:
      return Status::kNoDevice;  // no driver installed: as cudaGetDeviceCount says then
    case LoadError::kNoEntryPoint:
    case LoadError::kDriverTooOld:
      return Status::kInsufficientDriver;
    case LoadError::kNone:
      break;
  }
  if (ready.result == CUDA_ERROR_NO_DEVICE) return Status::kNoDevice;
  if (ready.result == CUDA_ERROR_INVALID_DEVICE) return Status::kInvalidDevice;
  if (ready.result == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH) return Status::kInsufficientDriver;
  return Status::kInitializationError;
}

// Reads Ready from a fresh worker; on failure fills *failure.
bool await_ready(int fd, const WorkerSpec& spec, std::chrono::milliseconds limit,
                 wire::Ready* ready, StartFailure* failure) {
  const uint64_t deadline = monotonic_ns() + static_cast<uint64_t>(limit.count()) * 1'000'000ull;
  const ssize_t n = receive_packet(fd, ready, sizeof *ready, deadline);
  if (n != static_cast<ssize_t>(sizeof *ready) || ready->op != wire::Op::kReady) {
    failure->status = Status::kInitializationError;
    failure->why = n == -1 ? spec.path + " did not report within " + std::to_string(limit.count()) + " ms"
                           : spec.path + " ended before it reported";
    return false;
  }
  if (ready->version != wire::kVersion) {
    failure->status = Status::kInitializationError;
    failure->why = spec.path + " speaks protocol version " + std::to_string(ready->version) +
                   ", this daemon " + std::to_string(wire::kVersion) + " (a stale binary?)";
    return false;
  }
  if (ready->ok != 1) {
    ready->message[sizeof ready->message - 1] = '\0';
    failure->status = status_for_start(*ready);
    failure->why = ready->message[0] ? ready->message : "the worker gave no reason";
    return false;
  }
  return true;
}

void kill_and_wait(pid_t pid) {
  ::kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

// --- start ---------------------------------------------------------------------

Status WorkerProcess::probe(const WorkerSpec& spec, std::chrono::milliseconds limit,
                            wire::DeviceReport* out, StartFailure* failure) {
  int ours = -1, theirs = -1;
  if (!socket_pair(&ours, &theirs, &failure->why)) return failure->status;
  Fd control(ours), child(theirs);
  pid_t pid = -1;
  if (!spawn(spec, {"probe", spec.driver, std::to_string(spec.device)}, {child.fd}, nullptr, &pid,
             &failure->why)) {
    return failure->status;
  }
  child.reset();  // only the worker holds its end now: EOF when it exits
  wire::Ready ready;
  bool ok = await_ready(control.fd, spec, limit, &ready, failure);
  if (ok) {
    const uint64_t deadline = monotonic_ns() + static_cast<uint64_t>(limit.count()) * 1'000'000ull;
    const ssize_t n = receive_packet(control.fd, out, sizeof *out, deadline);
    if (n != static_cast<ssize_t>(sizeof *out) || out->op != wire::Op::kDevice) {
      failure->status = Status::kInitializationError;
      failure->why = spec.path + " probe sent no device report";
      ok = false;
    }
    out->name[sizeof out->name - 1] = '\0';
  }
  kill_and_wait(pid);  // it is exiting anyway
  return ok ? Status::kSuccess : failure->status;
}

Status WorkerProcess::start(const WorkerSpec& spec, Reaper* reaper, std::chrono::milliseconds limit,
                            std::unique_ptr<WorkerProcess>* out, StartFailure* failure) {
  const uint64_t region_bytes = StagingArea::region_bytes(spec.slot_bytes);
  Fd mem(memfd_create("vgpu-cuda-staging", MFD_CLOEXEC));
  if (mem.fd < 0 || ftruncate(mem.fd, static_cast<off_t>(region_bytes)) != 0) {
    failure->why = errno_text("staging memfd");
    return failure->status;
  }
  void* region = mmap(nullptr, region_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, mem.fd, 0);
  if (region == MAP_FAILED) {
    failure->why = errno_text("mmap(staging)");
    return failure->status;
  }
  int c_ours = -1, c_theirs = -1, w_ours = -1, w_theirs = -1;
  if (!socket_pair(&c_ours, &c_theirs, &failure->why)) {
    munmap(region, region_bytes);
    return failure->status;
  }
  Fd control(c_ours), c_child(c_theirs);
  if (!socket_pair(&w_ours, &w_theirs, &failure->why)) {
    munmap(region, region_bytes);
    return failure->status;
  }
  Fd work(w_ours), w_child(w_theirs);
  // The kernels' stdout and stderr: files the backend drains after each work
  // item (take_output), so nothing a kernel prints reaches the daemon's log.
  Fd printed(memfd_create("vgpu-kernel-stdout", MFD_CLOEXEC)), errors(memfd_create("vgpu-kernel-stderr", MFD_CLOEXEC));
  if (printed.fd < 0 || errors.fd < 0) {
    failure->why = errno_text("output memfd");
    munmap(region, region_bytes);
    return failure->status;
  }
  const int outputs[2] = {printed.fd, errors.fd};
  pid_t pid = -1;
  const std::vector<std::string> args{"run",
                                      spec.driver,
                                      std::to_string(spec.device),
                                      std::to_string(spec.ctx_flags),
                                      std::to_string(spec.slot_bytes),
                                      spec.pin ? "1" : "0"};
  // The staging header is initialised before the worker can look at it.
  std::unique_ptr<WorkerProcess> w;
  if (!spawn(spec, args, {c_child.fd, w_child.fd, mem.fd, STDERR_FILENO}, outputs, &pid, &failure->why)) {
    munmap(region, region_bytes);
    return failure->status;
  }
  w.reset(new WorkerProcess(pid, control.release(), work.release(), static_cast<uint8_t*>(region),
                            region_bytes, spec.slot_bytes, reaper));
  w->output_fd_[0] = printed.release();
  w->output_fd_[1] = errors.release();
  c_child.reset();
  w_child.reset();
  wire::Ready ready;
  if (!await_ready(w->control_fd_, spec, limit, &ready, failure)) {
    w->kill("a worker that did not start");
    return failure->status;
  }
  w->pinned_ = ready.pinned != 0;
  *out = std::move(w);
  return Status::kSuccess;
}

WorkerProcess::WorkerProcess(pid_t pid, int control_fd, int work_fd, uint8_t* region,
                             uint64_t region_bytes, uint64_t slot_bytes, Reaper* reaper)
    : pid_(pid),
      control_fd_(control_fd),
      work_fd_(work_fd),
      region_(region),
      region_bytes_(region_bytes),
      staging_(region, slot_bytes),
      reaper_(reaper),
      control_buf_(wire::kMaxMessageBytes),
      work_buf_(wire::kMaxMessageBytes) {}

WorkerProcess::~WorkerProcess() {
  kill("released");
  close(control_fd_);
  close(work_fd_);
  for (int fd : output_fd_)
    if (fd >= 0) close(fd);
  munmap(region_, region_bytes_);
}

void WorkerProcess::kill(const std::string& why) {
  if (killed_.exchange(true)) return;
  ::kill(pid_, SIGKILL);
  // Whoever waits on it (the other socket, the staging counters) stops now.
  shutdown(control_fd_, SHUT_RDWR);
  shutdown(work_fd_, SHUT_RDWR);
  staging_.wake_all();
  if (reaper_) {
    reaper_->reap(pid_, "cuda worker (" + why + ")");
  } else {
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

// --- output ----------------------------------------------------------------------

size_t WorkerProcess::take_output(int stream, std::string* into, size_t limit) {
  const int fd = output_fd_[stream == 2 ? 1 : 0];
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 0) return 0;
  const size_t size = static_cast<size_t>(st.st_size);
  const size_t keep = std::min(size, limit);
  const size_t start = into->size();
  into->resize(start + keep);
  const ssize_t n = pread(fd, into->data() + start, keep, 0);
  into->resize(start + (n > 0 ? static_cast<size_t>(n) : 0));
  // Empty again, and the worker's next write lands at its start (the file
  // offset is shared with the worker's descriptor).
  [[maybe_unused]] const int t = ftruncate(fd, 0);
  lseek(fd, 0, SEEK_SET);
  return size - (n > 0 ? static_cast<size_t>(n) : 0);
}

// --- calls -----------------------------------------------------------------------

WorkerProcess::Answer WorkerProcess::receive(int fd, std::vector<uint8_t>& buf,
                                             uint64_t deadline_ns) {
  Answer a;
  const ssize_t n = receive_packet(fd, buf.data(), buf.size(), deadline_ns);
  if (n == -1) {
    a.link = killed_ ? Link::kGone : Link::kTimedOut;
    kill("missed its deadline");
    return a;
  }
  if (n < static_cast<ssize_t>(sizeof a.reply)) {
    kill(n == 0 ? "gone" : "broke the protocol");
    a.link = Link::kGone;
    return a;
  }
  std::memcpy(&a.reply, buf.data(), sizeof a.reply);
  a.tail.assign(buf.begin() + static_cast<ptrdiff_t>(sizeof a.reply), buf.begin() + n);
  a.link = Link::kOk;
  return a;
}

bool WorkerProcess::post(int fd, const wire::Request& request, std::span<const uint8_t> tail,
                         int pass_fd) {
  if (killed_) return false;
  wire::Request head = request;
  head.tail_bytes = static_cast<uint32_t>(tail.size());
  iovec iov[2] = {{&head, sizeof head}, {const_cast<uint8_t*>(tail.data()), tail.size()}};
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = tail.empty() ? 1 : 2;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (pass_fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
  }
  ssize_t sent;
  do {
    sent = sendmsg(fd, &msg, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent != static_cast<ssize_t>(sizeof head + tail.size())) {
    kill("cannot be written to");
    return false;
  }
  return true;
}

WorkerProcess::Answer WorkerProcess::exchange(int fd, const wire::Request& request,
                                              std::span<const uint8_t> tail, int pass_fd,
                                              uint64_t deadline_ns) {
  if (!post(fd, request, tail, pass_fd)) return Answer{};
  return receive(fd, buffer_for(fd), deadline_ns);
}

WorkerProcess::Answer WorkerProcess::control(const wire::Request& request,
                                             std::span<const uint8_t> tail, int pass_fd,
                                             uint64_t deadline_ns) {
  std::lock_guard<std::mutex> lock(control_mu_);
  return exchange(control_fd_, request, tail, pass_fd, deadline_ns);
}

WorkerProcess::Answer WorkerProcess::work(const wire::Request& request,
                                          std::span<const uint8_t> tail, uint64_t deadline_ns) {
  std::lock_guard<std::mutex> lock(work_mu_);
  return exchange(work_fd_, request, tail, -1, deadline_ns);
}

bool WorkerProcess::send_work(const wire::Request& request, std::span<const uint8_t> tail) {
  std::lock_guard<std::mutex> lock(work_mu_);
  return post(work_fd_, request, tail, -1);
}

WorkerProcess::Answer WorkerProcess::receive_work(uint64_t deadline_ns) {
  std::lock_guard<std::mutex> lock(work_mu_);
  if (killed_) return Answer{};
  return receive(work_fd_, work_buf_, deadline_ns);
}

bool WorkerProcess::work_socket_ready() const {
  pollfd pfd{work_fd_, POLLIN, 0};
  return poll(&pfd, 1, 0) != 0;
}

WorkerProcess::Answer WorkerProcess::copy_in(uint64_t dst, const uint8_t* src, uint64_t size,
                                             const wire::RowShape& rows, uint64_t deadline_ns) {
  std::lock_guard<std::mutex> lock(work_mu_);
  if (killed_) return Answer{};
  stage_first_chunk(staging_, src, size);
  wire::Request req;
  req.op = wire::Op::kCopyIn;
  req.a = dst;
  req.b = size;
  req.rows = rows;
  // Sent without waiting for the answer: the rest of the bytes follow it.
  if (send(work_fd_, &req, sizeof req, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof req)) {
    kill("cannot be written to");
    return Answer{};
  }
  const auto fed = feed_chunks(staging_, src, size, deadline_ns, [this] { return work_socket_ready(); });
  return staged_answer(fed, deadline_ns);  // kStopped: the answer (an error) is waiting
}

WorkerProcess::Answer WorkerProcess::copy_out(uint64_t src, uint8_t* dst, uint64_t size,
                                              const wire::RowShape& rows, uint64_t deadline_ns) {
  std::lock_guard<std::mutex> lock(work_mu_);
  if (killed_) return Answer{};
  staging_.reset();
  wire::Request req;
  req.op = wire::Op::kCopyOut;
  req.a = src;
  req.b = size;
  req.rows = rows;
  if (send(work_fd_, &req, sizeof req, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof req)) {
    kill("cannot be written to");
    return Answer{};
  }
  const auto drained =
      drain_chunks(staging_, dst, size, deadline_ns, [this] { return work_socket_ready(); });
  return staged_answer(drained, deadline_ns);
}

WorkerProcess::Answer WorkerProcess::staged_answer(StagingArea::Wait moved, uint64_t deadline_ns) {
  if (moved == StagingArea::Wait::kTimedOut) {
    Answer a;
    a.link = killed_ ? Link::kGone : Link::kTimedOut;
    kill("missed its deadline");
    return a;
  }
  Answer a = receive(work_fd_, work_buf_, deadline_ns);
  if (a.link == Link::kOk && answered_too_soon(moved, a.reply.result)) {
    kill("answered a copy before all its bytes moved");
    a.link = Link::kGone;
  }
  return a;
}

}  // namespace vgpu::executor::cuda
