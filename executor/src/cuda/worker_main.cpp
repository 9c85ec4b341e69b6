// vgpu-cuda-worker: one context of the cuda backend, in a process of its own.
// The daemon starts it (worker_process.cpp), talks to it over two sockets
// (worker_protocol.h) and kills it to end a kernel that runs too long: CUDA
// has no call that stops a running kernel, and ending the process that owns a
// context is the one way the driver tears it down with certainty (see
// docs/cuda-backend.md).
//
// It is built without the sanitizers, whatever the build type: the driver maps
// memory where AddressSanitizer keeps its shadow (google/sanitizers#629).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "device_query.h"
#include "driver_api.h"
#include "engine.h"
#include "worker_protocol.h"

namespace vgpu::executor::cuda {
namespace {

constexpr uint64_t kCopyWaitNs = 600'000'000'000ull;  // the daemon's watchdog ends us well before

// The worker's own messages: to the daemon's log (kLogFd) when it runs a
// context, where stdout and stderr are the kernels' (worker_protocol.h).
void warn(const char* fmt, const std::string& what) {
  const int fd = fcntl(wire::kLogFd, F_GETFD) >= 0 ? wire::kLogFd : STDERR_FILENO;
  char line[1024];
  int n = std::snprintf(line, sizeof line, "vgpu-cuda-worker[%d]: ", static_cast<int>(getpid()));
  n += std::snprintf(line + n, sizeof line - static_cast<size_t>(n), fmt, what.c_str());
  const size_t len = std::min(static_cast<size_t>(n), sizeof line - 2);
  line[len] = '\n';
  [[maybe_unused]] const ssize_t w = write(fd, line, len + 1);
}

bool send_message(int fd, const void* head, size_t head_bytes, const void* tail = nullptr,
                  size_t tail_bytes = 0) {
  iovec iov[2] = {{const_cast<void*>(head), head_bytes}, {const_cast<void*>(tail), tail_bytes}};
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = tail_bytes > 0 ? 2 : 1;
  return sendmsg(fd, &msg, MSG_NOSIGNAL) == static_cast<ssize_t>(head_bytes + tail_bytes);
}

// One packet; *fd_out receives a passed descriptor (-1 if none). 0 at EOF.
ssize_t receive(int fd, std::vector<uint8_t>& buf, int* fd_out) {
  *fd_out = -1;
  iovec iov{buf.data(), buf.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      std::memcpy(fd_out, CMSG_DATA(c), sizeof(int));
    }
  }
  return n;
}

void send_ready(int fd, wire::Ready ready, const std::string& message) {
  std::snprintf(ready.message, sizeof ready.message, "%s", message.c_str());
  send_message(fd, &ready, sizeof ready);
}

std::string as_string(const uint8_t* p, uint32_t n) { return {reinterpret_cast<const char*>(p), n}; }

// --- the two request loops ---------------------------------------------------

class Server {
 public:
  Server(Engine& engine, StagingArea& staging) : engine_(engine), staging_(staging) {}

  void serve_control() {
    std::vector<uint8_t> buf(wire::kMaxMessageBytes);
    for (;;) {
      int fd = -1;
      const ssize_t n = receive(wire::kControlFd, buf, &fd);
      if (n <= 0) _exit(0);  // the daemon is gone, or let go of us
      wire::Reply reply;
      std::vector<uint8_t> tail;
      control(buf.data(), static_cast<size_t>(n), fd, &reply, &tail);
      if (fd >= 0) close(fd);
      reply.sticky = engine_.sticky() != CUDA_SUCCESS;
      if (!send_message(wire::kControlFd, &reply, sizeof reply, tail.data(), tail.size())) _exit(0);
    }
  }

  void serve_work() {
    if (engine_.bind_thread() != CUDA_SUCCESS) _exit(4);
    std::vector<uint8_t> buf(wire::kMaxMessageBytes), tail;
    for (;;) {
      int fd = -1;
      const ssize_t n = receive(wire::kWorkFd, buf, &fd);
      if (n <= 0) _exit(0);
      if (fd >= 0) close(fd);
      wire::Reply reply;
      tail.clear();
      work(buf.data(), static_cast<size_t>(n), &reply, &tail);
      reply.sticky = engine_.sticky() != CUDA_SUCCESS;
      // What the driver printed for this item is in the files before the
      // daemon hears the item is done (it reads them then).
      std::fflush(stdout);
      std::fflush(stderr);
      if (!send_message(wire::kWorkFd, &reply, sizeof reply, tail.data(), tail.size())) _exit(0);
    }
  }

 private:
  static bool parse(const uint8_t* p, size_t n, wire::Request* req, const uint8_t** tail) {
    if (n < sizeof *req) return false;
    std::memcpy(req, p, sizeof *req);
    *tail = p + sizeof *req;
    return req->tail_bytes == n - sizeof *req;
  }

  void control(const uint8_t* p, size_t n, int fd, wire::Reply* reply, std::vector<uint8_t>* tail) {
    wire::Request req;
    const uint8_t* t = nullptr;
    reply->result = CUDA_ERROR_INVALID_VALUE;
    if (!parse(p, n, &req, &t)) return;
    reply->op = req.op;
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    switch (req.op) {
      case wire::Op::kAlloc:
        r = engine_.alloc(req.a, &reply->a);
        break;
      case wire::Op::kModuleLoad:
        r = load_module(req.a, req.b, fd);
        break;
      case wire::Op::kAttachArea:
        r = attach_area(req.a, req.b, fd);
        break;
      case wire::Op::kFunctionGet: {
        if (req.tail_bytes == 0 || req.tail_bytes > wire::kMaxNameBytes) break;
        std::vector<ParamSlot> layout;
        bool known = false;
        r = engine_.function_get(req.a, req.b, as_string(t, req.tail_bytes), &layout, &known);
        if (r != CUDA_SUCCESS) break;
        if (layout.size() > wire::kMaxParams) {
          r = CUDA_ERROR_INVALID_IMAGE;
          break;
        }
        reply->a = known ? 1 : 0;
        reply->count = static_cast<uint32_t>(layout.size());
        tail->resize(layout.size() * sizeof(wire::ParamSlot));
        for (size_t i = 0; i < layout.size(); ++i) {
          const wire::ParamSlot s{layout[i].offset, layout[i].size};
          std::memcpy(tail->data() + i * sizeof s, &s, sizeof s);
        }
        break;
      }
      case wire::Op::kVarGet:
        if (req.tail_bytes == 0 || req.tail_bytes > wire::kMaxNameBytes) break;
        r = engine_.var_get(req.a, as_string(t, req.tail_bytes), &reply->a, &reply->b);
        break;
      case wire::Op::kFuncAttributes: {
        KernelAttributes k;
        r = engine_.func_attributes(req.a, &k);
        if (r != CUDA_SUCCESS) break;
        const wire::Attributes a{k.shared_size_bytes, k.const_size_bytes, k.local_size_bytes,
                                 k.max_threads_per_block, k.num_regs, k.ptx_version,
                                 k.binary_version, 0};
        tail->resize(sizeof a);
        std::memcpy(tail->data(), &a, sizeof a);
        break;
      }
      case wire::Op::kEventCreate:
        r = engine_.event_create(req.a, req.value);
        break;
      case wire::Op::kTextureCreate: {
        CUDA_RESOURCE_DESC res;
        CUDA_TEXTURE_DESC tex;
        if (req.tail_bytes != sizeof res + sizeof tex) break;
        std::memcpy(&res, t, sizeof res);
        std::memcpy(&tex, t + sizeof res, sizeof tex);
        r = engine_.texture_create(res, tex, &reply->a);
        break;
      }
      case wire::Op::kUnloadModule:  // a module whose load the daemon abandoned
        r = engine_.unload_module(req.a);
        break;
      case wire::Op::kSetHeapSize:
        r = engine_.set_heap_size(req.a);
        break;
      case wire::Op::kEventElapsed: {
        float ms = 0;
        r = engine_.event_elapsed(req.a, req.b, &ms);
        const double ns = static_cast<double>(ms) * 1e6;
        reply->a = static_cast<uint64_t>(static_cast<int64_t>(ns));
        break;
      }
      default:
        break;
    }
    reply->result = r;
  }

  // Maps bytes [offset, offset + bytes) of the data area's file and has the
  // engine register them. The mapping lives as long as the worker.
  CUresult attach_area(uint64_t offset, uint64_t bytes, int fd) {
    struct stat st {};
    const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    if (fd < 0 || bytes == 0 || offset % page != 0 || fstat(fd, &st) != 0 ||
        offset > static_cast<uint64_t>(st.st_size) ||
        bytes > static_cast<uint64_t>(st.st_size) - offset) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    void* area =
        mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(offset));
    if (area == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    const CUresult r = engine_.attach_area(static_cast<uint8_t*>(area), bytes);
    if (r != CUDA_SUCCESS) munmap(area, bytes);
    return r;
  }

  CUresult load_module(uint64_t module, uint64_t bytes, int fd) {
    struct stat st{};
    if (fd < 0 || bytes == 0 || fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < bytes) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    void* image = mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    if (image == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    const CUresult r = engine_.module_load(module, image);
    munmap(image, bytes);
    return r;
  }

  // A batch's records (worker_protocol.h), checked: each whole, a known
  // kind, its bytes no more than that kind carries, nothing left over.
  static bool parse_batch(const wire::Request& req, const uint8_t* t, std::vector<ItemSpec>* out) {
    if (req.a > wire::kMaxBatch) return false;
    size_t at = 0;
    for (uint64_t i = 0; i < req.a; ++i) {
      wire::BatchItem b;
      if (req.tail_bytes - at < sizeof b) return false;
      std::memcpy(&b, t + at, sizeof b);
      at += sizeof b;
      const size_t padded = (size_t{b.bytes} + 7) / 8 * 8;
      if (req.tail_bytes - at < padded) return false;
      ItemSpec item;
      item.kind = b.kind;
      item.stream = {b.stream, b.stream_flags, b.stream_priority};
      item.a = b.a;
      item.b = b.b;
      item.c = b.c;
      switch (b.kind) {
        case wire::ItemKind::kLaunch:
          if (b.bytes > wire::kMaxParamBytes) return false;
          item.launch = LaunchSpec{
              b.a,          {b.grid[0], b.grid[1], b.grid[2]}, {b.block[0], b.block[1], b.block[2]},
              b.shared_mem, wire::launch_cooperative(b.flags), {t + at, b.bytes}};
          wire::launch_cluster(b.flags, item.launch.cluster);
          break;
        case wire::ItemKind::kCopyIn:
          if (b.bytes > wire::kMaxInlineCopyBytes) return false;
          item.data = {t + at, b.bytes};
          break;
        case wire::ItemKind::kCopyOut:
          if (b.bytes != 0 || b.c > wire::kMaxInlineCopyBytes) return false;
          break;
        case wire::ItemKind::kNothing:
        case wire::ItemKind::kMemset:
        case wire::ItemKind::kCopyOnDevice:
        case wire::ItemKind::kRecordEvent:
        case wire::ItemKind::kWaitEvent:
        case wire::ItemKind::kDestroyStream:
          if (b.bytes != 0) return false;
          break;
        default:
          return false;
      }
      out->push_back(item);
      at += padded;
    }
    return at == req.tail_bytes;
  }

  // kBatch and kFinishBatch. The daemon says how many items it knows are in
  // flight; a daemon that lost count gets INVALID_VALUE, and nothing runs.
  void run_batch(const wire::Request& req, const uint8_t* t, wire::Reply* reply,
                 std::vector<uint8_t>* tail) {
    std::vector<ItemSpec> items;
    if (req.c != engine_.in_flight()) return;
    if (req.op == wire::Op::kBatch &&
        (!parse_batch(req, t, &items) || (items.empty() && req.c == 0))) {
      return;
    }
    std::vector<Timed> done;
    std::vector<uint8_t> out;
    size_t issued = 0;
    if (items.empty()) {
      engine_.finish_items(&done, &out);
    } else {
      const bool leave = (req.value & wire::kLeaveInFlight) != 0;
      issued =
          engine_.run_items(items, req.b, req.value & 0xff,
                            {leave, leave && (req.value & wire::kWorkFollows) != 0}, &done, &out);
    }
    reply->result = CUDA_SUCCESS;
    reply->a = issued;
    reply->b = engine_.in_flight();
    reply->count = static_cast<uint32_t>(done.size());
    tail->resize(done.size() * sizeof(wire::ItemResult));
    for (size_t i = 0; i < done.size(); ++i) {
      const wire::ItemResult r{done[i].result, 0, done[i].gpu_ns};
      std::memcpy(tail->data() + i * sizeof r, &r, sizeof r);
      if (reply->result == CUDA_SUCCESS) reply->result = r.result;
      reply->gpu_ns += r.gpu_ns;
    }
    tail->insert(tail->end(), out.begin(),
                 out.end());  // the daemon bounded it (kMaxReplyCopyBytes)
  }

  void work(const uint8_t* p, size_t n, wire::Reply* reply, std::vector<uint8_t>* tail) {
    wire::Request req;
    const uint8_t* t = nullptr;
    reply->result = CUDA_ERROR_INVALID_VALUE;
    if (!parse(p, n, &req, &t)) return;
    reply->op = req.op;
    // Mid-copy, the daemon only ever waits: anything on the socket (its end
    // closing) means it is gone.
    auto stop = [] {
      pollfd pfd{wire::kWorkFd, POLLIN, 0};
      return poll(&pfd, 1, 0) != 0;
    };
    const uint64_t deadline = monotonic_ns() + kCopyWaitNs;
    Timed t_{CUDA_ERROR_INVALID_VALUE, 0};
    switch (req.op) {
      case wire::Op::kCopyIn:
        t_ = engine_.copy_in(req.a, req.b, req.rows, deadline, stop);
        if (t_.result != CUDA_SUCCESS) staging_.wake_all();
        break;
      case wire::Op::kCopyOut:
        t_ = engine_.copy_out(req.a, req.b, req.rows, deadline, stop);
        if (t_.result != CUDA_SUCCESS) staging_.wake_all();
        break;
      case wire::Op::kCopyInArea:
      case wire::Op::kCopyOutArea:
        t_ = engine_.copy_area(req.op == wire::Op::kCopyInArea, req.a, req.c, req.b);
        break;
      case wire::Op::kCopyOnDevice:
        t_ = engine_.copy_on_device(req.a, req.b, req.c, req.rows);
        break;
      case wire::Op::kBatch:
      case wire::Op::kFinishBatch:
        run_batch(req, t, reply, tail);
        return;
      case wire::Op::kSynchronize:
        t_ = engine_.synchronize();
        break;
      case wire::Op::kFree:
        t_ = {engine_.free(req.a), 0};
        break;
      case wire::Op::kDestroyEvent:
        t_ = {engine_.destroy_event(req.a), 0};
        break;
      case wire::Op::kTextureDestroy:
        t_ = {engine_.texture_destroy(req.a), 0};
        break;
      case wire::Op::kUnloadModule:
        t_ = {engine_.unload_module(req.a), 0};
        break;
      case wire::Op::kReset:
        t_ = {engine_.reset(), 0};
        break;
      default:
        break;
    }
    reply->result = t_.result;
    reply->gpu_ns = t_.gpu_ns;
  }

  Engine& engine_;
  StagingArea& staging_;
};

bool parse_int(const char* s, long long lo, long long hi, long long* out) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s, &end, 0);
  if (errno || end == s || *end || v < lo || v > hi) return false;
  *out = v;
  return true;
}

int probe(const DriverApi& api, int device) {
  wire::Ready ready;
  std::string why;
  CUresult r = api.cuInit(0);
  if (r != CUDA_SUCCESS) {
    ready.result = r;
    send_ready(wire::kControlFd, ready, "cuInit: " + error_name(api, r));
    return 0;
  }
  int count = 0;
  api.cuDeviceGetCount(&count);
  if (device >= count) {
    ready.result = count == 0 ? CUDA_ERROR_NO_DEVICE : CUDA_ERROR_INVALID_DEVICE;
    send_ready(wire::kControlFd, ready,
               "device " + std::to_string(device) + " does not exist (the driver sees " +
                   std::to_string(count) + ")");
    return 0;
  }
  wire::DeviceReport report;
  if ((r = query_device(api, device, &report, &why)) != CUDA_SUCCESS) {
    ready.result = r;
    send_ready(wire::kControlFd, ready, why);
    return 0;
  }
  ready.ok = 1;
  send_ready(wire::kControlFd, ready, "");
  send_message(wire::kControlFd, &report, sizeof report);
  return 0;
}

int run(const DriverApi& api, int device, unsigned ctx_flags, uint64_t slot_bytes, bool pin) {
  wire::Ready ready;
  const uint64_t region_bytes = StagingArea::region_bytes(slot_bytes);
  void* region = mmap(nullptr, region_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
                      wire::kStagingFd, 0);
  if (region == MAP_FAILED) {
    send_ready(wire::kControlFd, ready,
               std::string("cannot map the staging area: ") + std::strerror(errno));
    return 0;
  }
  close(wire::kStagingFd);
  static StagingArea staging(static_cast<uint8_t*>(region), slot_bytes);
  static Engine engine(api);
  std::string why;
  if (CUresult r = engine.init(device, ctx_flags, &why); r != CUDA_SUCCESS) {
    ready.result = r;
    send_ready(wire::kControlFd, ready, why);
    return 0;
  }
  if (CUresult r = engine.attach_staging(&staging, pin); r != CUDA_SUCCESS) {
    warn("cannot page-lock the staging area (%s); copies use pageable memory",
        error_name(api, r));
  }
  ready.ok = 1;
  ready.pinned = engine.staging_pinned() ? 1 : 0;
  send_ready(wire::kControlFd, ready, "");
  static Server server(engine, staging);
  std::thread([] { server.serve_work(); }).detach();
  server.serve_control();  // never returns: either loop ends the process
  return 0;
}

}  // namespace
}  // namespace vgpu::executor::cuda

int main(int argc, char** argv) {
  using namespace vgpu::executor::cuda;
  signal(SIGPIPE, SIG_IGN);
  // Nothing may outlive the daemon: a worker whose parent is gone dies, even
  // while it waits for the GPU. The daemon starts every worker from one thread
  // that lives as long as the backend (worker_pool.cpp).
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // Nothing it runs may gain privileges. The sim worker's filter and root
  // drop are not applied here: the driver opens device nodes and /proc and
  // /sys files as it goes (docs/robustness.md says what it needs).
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  const std::string mode = argc > 1 ? argv[1] : "";
  long long device = 0, flags = 0, slot = 0, pin = 0;
  const bool probe_args = mode == "probe" && argc == 4 && parse_int(argv[3], 0, 1 << 20, &device);
  const bool run_args = mode == "run" && argc == 7 && parse_int(argv[3], 0, 1 << 20, &device) &&
                        parse_int(argv[4], 0, 0xffff, &flags) &&
                        parse_int(argv[5], 4096, 1ll << 32, &slot) && parse_int(argv[6], 0, 1, &pin);
  if (!probe_args && !run_args) {
    std::fprintf(stderr,
                 "usage: vgpu-cuda-worker run DRIVER DEVICE CTX_FLAGS SLOT_BYTES PIN\n"
                 "       vgpu-cuda-worker probe DRIVER DEVICE\n"
                 "(started by vgpud's cuda backend, with its sockets on fds 3-5)\n");
    return 2;
  }
  static DriverApi api;
  std::string why;
  const LoadError e = load_driver(argv[2], &api, &why);
  if (e != LoadError::kNone) {
    wire::Ready ready;
    ready.load_error = static_cast<int32_t>(e);
    send_ready(wire::kControlFd, ready, why);
    return 0;
  }
  if (probe_args) return probe(api, static_cast<int>(device));
  return run(api, static_cast<int>(device), static_cast<unsigned>(flags),
             static_cast<uint64_t>(slot), pin != 0);
}
