// vgpu-sim-worker: runs one context's kernels for the sim backend.
//
// It maps that context's device memory (fd 4) at the context's own device
// addresses, loads the kernel plug-ins, and runs each launch the backend
// sends on fd 3 by calling vgpu_sim_<mangled name>, or, when no plug-in
// exports it, by interpreting the kernel's PTX. A kernel that faults
// kills this process only; the backend sees the socket close and faults the
// context. See worker_protocol.h for the messages.
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "vgpu/sim_kernel.h"
#include "device_heap.h"
#include "launch_time.h"
#include "ptx/ptx_interpreter.h"
#include "texture_lanes.h"
#include "texture_sampler.h"
#include "worker_protocol.h"
#include "worker_ptx.h"
#include "worker_sandbox.h"

namespace {

namespace wire = vgpu::executor::sim::wire;
namespace sim = vgpu::executor::sim;
namespace ptx = vgpu::executor::sim::ptx;
using vgpu::executor::TextureDesc;
using vgpu::executor::sim::count_only_cpu_time;
using vgpu::executor::sim::DeviceHeap;
using vgpu::executor::sim::WorkerPtx;

void log(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void log(const char* fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "vgpu-sim-worker[%d]: %s\n", static_cast<int>(getpid()), line);
}

// The reply to the batch being run: written launch by launch, so the fault
// handler can report the launches that completed before the one that faulted.
struct BatchReply {
  wire::BatchDone head;
  wire::LaunchDone done[wire::kMaxBatch];
};
BatchReply g_reply;
volatile sig_atomic_t g_in_batch = 0;
unsigned g_interpreter_threads = 1;  // host threads an interpreted grid runs on

bool send_packet(const void* data, size_t size) {
  ssize_t n;
  do {
    n = send(wire::kSocketFd, data, size, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(size);
}

[[noreturn]] void report_and_exit(bool ok, const std::string& message) {
  wire::Ready ready;
  ready.ok = ok ? 1 : 0;
  std::snprintf(ready.message, sizeof ready.message, "%s", message.c_str());
  send_packet(&ready, sizeof ready);
  if (!ok) log("%s", message.c_str());
  _exit(ok ? 0 : 1);
}

// A kernel that faults: tell the backend what and where, then die of it.
// Only async-signal-safe calls here.
void on_fault(int sig, siginfo_t* info, void*) {
  if (g_in_batch) {
    g_reply.head.final = 0;
    send(wire::kSocketFd, &g_reply,
         sizeof g_reply.head + g_reply.head.count * sizeof(wire::LaunchDone), MSG_NOSIGNAL);
  }
  wire::Fault fault;
  fault.signal = sig;
  fault.address = reinterpret_cast<uint64_t>(info ? info->si_addr : nullptr);
  send(wire::kSocketFd, &fault, sizeof fault, MSG_NOSIGNAL);
  signal(sig, SIG_DFL);  // SA_RESETHAND did too; unblock it and die of it
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  raise(sig);
  _exit(128 + sig);
}

void install_fault_handlers() {
  static char alt_stack[64 * 1024];  // a kernel that overflows its stack faults too
  stack_t ss{};
  ss.ss_sp = alt_stack;
  ss.ss_size = sizeof alt_stack;
  sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(sig, &sa, nullptr);
}

// The backend going away (its end closed) ends the worker even while a
// kernel is still running in the main thread.
void watch_backend() {
  for (;;) {
    pollfd p{wire::kSocketFd, POLLRDHUP, 0};
    if (poll(&p, 1, -1) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))) {
      _exit(0);
    }
  }
}

class Worker {
 public:
  bool load(const char* path, std::string* error) {
    void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      *error = std::string("cannot load kernel plug-in: ") + dlerror();
      return false;
    }
    // A plug-in that needs a newer launch struct than this worker passes.
    if (const auto* abi = static_cast<const int*>(dlsym(h, "vgpu_plugin_abi")); abi && *abi > VGPU_SIM_ABI) {
      *error = std::string("kernel plug-in ") + path + " needs sim ABI " + std::to_string(*abi) +
               "; this vgpud has " + std::to_string(VGPU_SIM_ABI);
      dlclose(h);
      return false;
    }
    plugins_.push_back(h);
    return true;
  }

  void serve() {
    // Packets are read into an aligned buffer; params are copied out of it
    // into their own 16-byte aligned buffer, as a GPU's param space is.
    auto buf = std::make_unique<uint64_t[]>(wire::kMaxMessageBytes / sizeof(uint64_t));
    for (;;) {
      ssize_t n;
      do {
        n = recv(wire::kSocketFd, buf.get(), wire::kMaxMessageBytes, MSG_TRUNC);
      } while (n < 0 && errno == EINTR);
      if (n <= 0) _exit(0);  // the backend is gone
      if (static_cast<size_t>(n) > wire::kMaxMessageBytes || n < 4) protocol_error("bad packet");
      const auto* bytes = reinterpret_cast<const uint8_t*>(buf.get());
      wire::Op op;
      std::memcpy(&op, bytes, sizeof op);
      switch (op) {
        case wire::Op::kSymbolsReset: symbols_.clear(); by_name_.clear(); break;
        case wire::Op::kSymbol: add_symbol(bytes, static_cast<size_t>(n)); break;
        case wire::Op::kTexturesReset: textures_.clear(); break;
        case wire::Op::kTexture: add_texture(bytes, static_cast<size_t>(n)); break;
        case wire::Op::kPtxChunk: add_ptx(bytes, static_cast<size_t>(n)); break;
        case wire::Op::kLaunchBatch: run_batch(bytes, static_cast<size_t>(n)); break;
        default: protocol_error("unknown message");
      }
    }
  }

 private:
  [[noreturn]] static void protocol_error(const char* what) {
    log("protocol error: %s", what);
    _exit(2);
  }

  void add_symbol(const uint8_t* bytes, size_t n) {
    wire::Symbol h;
    if (n < sizeof h) protocol_error("short symbol");
    std::memcpy(&h, bytes, sizeof h);
    if (h.name_bytes > wire::kMaxNameBytes || n != sizeof h + h.name_bytes) {
      protocol_error("bad symbol");
    }
    std::string name(reinterpret_cast<const char*>(bytes + sizeof h), h.name_bytes);
    by_name_[name] = h.address;
    symbols_[{h.module, std::move(name)}] = h.address;
  }

  void add_ptx(const uint8_t* bytes, size_t n) {
    wire::PtxChunk h;
    if (n < sizeof h) protocol_error("short PTX chunk");
    std::memcpy(&h, bytes, sizeof h);
    if (n != sizeof h + h.bytes || !ptx_.add_chunk(h, reinterpret_cast<const char*>(bytes + sizeof h))) {
      protocol_error("bad PTX chunk");
    }
  }

  void add_texture(const uint8_t* bytes, size_t n) {
    wire::Texture t;
    if (n != sizeof t) protocol_error("bad texture");
    std::memcpy(&t, bytes, sizeof t);
    textures_[t.handle] = t.desc;
  }

  // The texture helpers (vgpu_sim_launch version 4). The backend checked
  // each object names this context's memory, which this process maps at
  // the same addresses.
  static const TextureDesc* texture(const vgpu_sim_launch* self, unsigned long long handle,
                                    TextureDesc::Object kind) {
    return self ? static_cast<const Worker*>(self->backend)->find_texture(handle, kind) : nullptr;
  }
  const TextureDesc* find_texture(uint64_t handle, TextureDesc::Object kind) const {
    auto it = textures_.find(handle);
    return it == textures_.end() || it->second.object != kind ? nullptr : &it->second;
  }
  static constexpr int kBadAccess = 700;  // cudaErrorIllegalAddress

  static int texture_read(const vgpu_sim_launch* self, unsigned long long handle, float x, float y,
                          float z, int layer, float lod, void* out) {
    const TextureDesc* d = texture(self, handle, TextureDesc::Object::kTexture);
    if (!d || !out) return kBadAccess;
    const float coord[3] = {x, y, z};
    return sim::texture_read(*d, reinterpret_cast<const uint8_t*>(d->base), coord, layer, lod, out) == 0
               ? 0 : kBadAccess;
  }
  static int texture_fetch(const vgpu_sim_launch* self, unsigned long long handle, long long index,
                           void* out) {
    const TextureDesc* d = texture(self, handle, TextureDesc::Object::kTexture);
    if (!d || !out) return kBadAccess;
    return sim::texture_fetch(*d, reinterpret_cast<const uint8_t*>(d->base), index, out) == 0 ? 0 : kBadAccess;
  }
  static int surface_read(const vgpu_sim_launch* self, unsigned long long handle, long long x_bytes,
                          long long y, long long z, void* out, size_t size, int boundary) {
    const TextureDesc* d = texture(self, handle, TextureDesc::Object::kSurface);
    if (!d || !out) return kBadAccess;
    return sim::surface_read(*d, reinterpret_cast<const uint8_t*>(d->base), x_bytes, y, z, out, size,
                             boundary) == 0 ? 0 : kBadAccess;
  }
  static int surface_write(const vgpu_sim_launch* self, unsigned long long handle, const void* in,
                           size_t size, long long x_bytes, long long y, long long z, int boundary) {
    const TextureDesc* d = texture(self, handle, TextureDesc::Object::kSurface);
    if (!d || !in) return kBadAccess;
    return sim::surface_write(*d, reinterpret_cast<uint8_t*>(d->base), in, size, x_bytes, y, z,
                              boundary) == 0 ? 0 : kBadAccess;
  }

  static void* symbol_address(const vgpu_sim_launch* self, const char* device_name) {
    if (!self || !device_name) return nullptr;
    const auto* w = static_cast<const Worker*>(self->backend);
    auto it = w->symbols_.find({w->current_module_, device_name});
    if (it != w->symbols_.end()) return reinterpret_cast<void*>(it->second);
    auto any = w->by_name_.find(device_name);
    return any == w->by_name_.end() ? nullptr : reinterpret_cast<void*>(any->second);
  }

  // A kernel's printf: kept with the batch's other output and sent ahead of
  // its BatchDone, in Printf packets (output past the batch's bound is lost,
  // as a full printf FIFO loses it on a GPU).
  static int device_printf(const vgpu_sim_launch* self, const char* format, ...) {
    if (!self || !format) return -1;
    auto* w = static_cast<Worker*>(self->backend);
    char line[4096];
    va_list ap;
    va_start(ap, format);
    const int n = std::vsnprintf(line, sizeof line, format, ap);
    va_end(ap);
    if (n <= 0) return n;
    const size_t len = std::min(static_cast<size_t>(n), sizeof line - 1);
    if (w->printed_ + len > wire::kMaxPrintfPerBatch) return n;
    w->printed_ += len;
    w->printf_.append(line, len);
    if (w->printf_.size() >= wire::kMaxPrintfChunk) w->send_printf();
    return n;
  }

  // A failed assert: CUDA's message for the program's stderr, and the
  // launch's outcome once the kernel returns.
  static void device_assert(const vgpu_sim_launch* self, const unsigned block[3], const unsigned thread[3],
                            const char* expression, const char* file, unsigned line, const char* function) {
    if (!self) return;
    auto* w = static_cast<Worker*>(self->backend);
    w->assert_failed_ = true;
    char text[4096];
    const unsigned zero[3] = {0, 0, 0};
    const unsigned* b = block ? block : zero;
    const unsigned* t = thread ? thread : zero;
    const int n = std::snprintf(text, sizeof text,
                                "%s:%u: %s: block: [%u,%u,%u], thread: [%u,%u,%u] Assertion `%s` failed.\n",
                                file ? file : "?", line, function ? function : "?", b[0], b[1], b[2], t[0],
                                t[1], t[2], expression ? expression : "?");
    if (n <= 0 || w->printed_ + static_cast<size_t>(n) > wire::kMaxPrintfPerBatch) return;
    const size_t len = std::min(static_cast<size_t>(n), sizeof text - 1);
    w->printed_ += len;
    w->asserts_.append(text, len);
  }

  void send_printf() {
    send_stream(printf_, 1);
    send_stream(asserts_, 2);
  }

  void send_stream(std::string& text, uint32_t stream) {
    const char* p = text.data();
    size_t left = text.size();
    while (left > 0) {
      const size_t chunk = std::min(left, wire::kMaxPrintfChunk);
      wire::Printf h;
      h.bytes = static_cast<uint32_t>(chunk);
      h.stream = stream;
      std::memcpy(printf_packet_, &h, sizeof h);
      std::memcpy(printf_packet_ + sizeof h, p, chunk);
      if (!send_packet(printf_packet_, sizeof h + chunk)) _exit(0);
      p += chunk;
      left -= chunk;
    }
    text.clear();
  }

  vgpu_sim_kernel_fn lookup(std::string_view name) {
    auto it = kernels_.find(name);
    if (it != kernels_.end()) return it->second;
    const std::string symbol = VGPU_SIM_SYMBOL_PREFIX + std::string(name);
    vgpu_sim_kernel_fn fn = nullptr;
    for (void* h : plugins_) {
      if (void* s = dlsym(h, symbol.c_str())) {
        fn = reinterpret_cast<vgpu_sim_kernel_fn>(s);
        break;
      }
    }
    kernels_.emplace(std::string(name), fn);
    return fn;
  }

  static uint64_t clock_ns(clockid_t clock) {
    timespec ts{};
    clock_gettime(clock, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
  }
  static uint64_t now_ns() { return clock_ns(CLOCK_MONOTONIC); }

  // Checks the whole batch before running any of it: a malformed one is a
  // protocol error, never half run.
  void run_batch(const uint8_t* bytes, size_t n) {
    wire::LaunchBatch b;
    if (n < sizeof b) protocol_error("short batch");
    std::memcpy(&b, bytes, sizeof b);
    if (b.count == 0 || b.count > wire::kMaxBatch) protocol_error("bad batch count");
    size_t pos = sizeof b;
    for (uint32_t i = 0; i < b.count; ++i) {
      wire::Launch h;
      if (n - pos < sizeof h) protocol_error("short launch");
      std::memcpy(&h, bytes + pos, sizeof h);
      if (h.op != wire::Op::kLaunch || h.name_bytes > wire::kMaxNameBytes ||
          h.params_bytes > wire::kMaxParamBytes ||
          n - pos < wire::record_bytes(h.name_bytes, h.params_bytes)) {
        protocol_error("bad launch");
      }
      offsets_[i] = pos;
      pos += wire::record_bytes(h.name_bytes, h.params_bytes);
    }
    if (pos != n) protocol_error("bad batch length");

    // The backend changes the heap's size only while no kernel has used it.
    if (!heap_.used() && b.heap_bytes != 0) heap_.set_capacity(b.heap_bytes);
    g_reply.head = wire::BatchDone{};
    g_in_batch = 1;
    const uint64_t start = now_ns();
    const uint64_t cpu_start = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    uint64_t modeled = 0;
    uint64_t began = start;
    for (uint32_t i = 0; i < b.count; ++i) {
      wire::LaunchDone done = run(bytes + offsets_[i]);
      if (heap_.used()) done.flags |= wire::kHeapUsed;
      const uint64_t ended = now_ns();
      done.ran_ns = ended - began;
      began = ended;
      g_reply.done[i] = done;
      std::atomic_signal_fence(std::memory_order_seq_cst);  // the record before the count
      g_reply.head.count = i + 1;
      modeled += done.modeled_ns;
      // A launch that faults the context ends the batch: the rest must not run on it.
      if (done.outcome == wire::Outcome::kPluginError || done.outcome == wire::Outcome::kAssert ||
          done.outcome == wire::Outcome::kTrap || done.outcome == wire::Outcome::kIllegalAddress ||
          done.modeled_ns > b.watchdog_ns)
        break;
      if (modeled >= b.budget_ns || ended - start >= b.slice_ns) break;
    }
    count_only_cpu_time({g_reply.done, g_reply.head.count}, began - start,
                        clock_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu_start);
    g_in_batch = 0;
    send_printf();  // the output first: the backend has it when the batch is done
    printed_ = 0;
    if (!send_packet(&g_reply, sizeof g_reply.head + g_reply.head.count * sizeof(wire::LaunchDone))) {
      _exit(0);
    }
  }

  // One launch record (already checked).
  wire::LaunchDone run(const uint8_t* record) {
    wire::Launch h;
    std::memcpy(&h, record, sizeof h);
    const std::string_view name(reinterpret_cast<const char*>(record + sizeof h), h.name_bytes);
    std::memcpy(params_, record + sizeof h + h.name_bytes, h.params_bytes);

    wire::LaunchDone done;
    done.modeled_ns = h.modeled_ns;
    if (vgpu_sim_kernel_fn fn = lookup(name)) {
      vgpu_sim_launch l{};
      for (int i = 0; i < 3; ++i) {
        l.grid[i] = h.grid[i];
        l.block[i] = h.block[i];
        l.cluster[i] = h.cluster[i];
      }
      l.shared_mem = h.shared_mem;
      l.params = params_;
      l.params_size = h.params_bytes;
      l.modeled_ns = h.modeled_ns;
      l.symbol_address = &Worker::symbol_address;
      l.backend = this;
      l.device_printf = &Worker::device_printf;
      l.device_assert = &Worker::device_assert;
      l.texture_read = &Worker::texture_read;
      l.texture_fetch = &Worker::texture_fetch;
      l.surface_read = &Worker::surface_read;
      l.surface_write = &Worker::surface_write;
      current_module_ = h.module;
      assert_failed_ = false;
      const int rc = fn(&l);
      done.modeled_ns = l.modeled_ns;
      if (assert_failed_) {
        done.outcome = wire::Outcome::kAssert;
      } else if (rc != 0) {
        done.outcome = wire::Outcome::kPluginError;
        done.plugin_rc = rc;
      }
    } else {
      done.outcome = interpret(h, name);
    }
    return done;
  }

  // A kernel no plug-in implements, from its module's PTX.
  wire::Outcome interpret(const wire::Launch& h, std::string_view name) {
    std::string why;
    const ptx::Program* program = ptx_.program(h.module, &why);
    if (!program || !ptx::has_entry(*program, name)) {
      if (!why.empty()) refuse_once(name, why);
      return wire::Outcome::kNoImplementation;
    }
    ptx::Launch l;
    for (int i = 0; i < 3; ++i) {
      l.grid[i] = h.grid[i];
      l.block[i] = h.block[i];
    }
    l.dynamic_shared = h.shared_mem;
    l.params = params_;
    l.params_size = h.params_bytes;
    l.cooperative = (h.flags & wire::kLaunchCooperative) != 0;
    l.host_threads = g_interpreter_threads;
    ptx::Environment env;
    env.symbol_address = [this, &h](std::string_view variable) -> uint64_t {
      auto it = symbols_.find({h.module, std::string(variable)});
      if (it != symbols_.end()) return it->second;
      auto any = by_name_.find(std::string(variable));
      return any == by_name_.end() ? 0 : any->second;
    };
    env.print = [this](std::string_view text) {
      if (printed_ + text.size() > wire::kMaxPrintfPerBatch) return;
      printed_ += text.size();
      printf_.append(text);
      if (printf_.size() >= wire::kMaxPrintfChunk) send_printf();
    };
    env.texture_read = [this](uint64_t handle, const float coord[3], int layer, float lod, uint32_t out[4]) {
      const TextureDesc* d = find_texture(handle, TextureDesc::Object::kTexture);
      return d && sim::texture_lanes(*d, coord, layer, lod, out);
    };
    env.texture_fetch = [this](uint64_t handle, int64_t index, uint32_t out[4]) {
      const TextureDesc* d = find_texture(handle, TextureDesc::Object::kTexture);
      return d && sim::texture_fetch_lanes(*d, index, out);
    };
    env.surface_access = [this](uint64_t handle, int64_t x, int64_t y, int64_t z, void* data, size_t size,
                                int boundary, bool write) {
      const TextureDesc* d = find_texture(handle, TextureDesc::Object::kSurface);
      if (!d) return false;
      auto* memory = reinterpret_cast<uint8_t*>(d->base);
      return (write ? sim::surface_write(*d, memory, data, size, x, y, z, boundary)
                    : sim::surface_read(*d, memory, x, y, z, data, size, boundary)) == 0;
    };
    env.heap_alloc = [this](uint64_t bytes) { return heap_.allocate(bytes); };
    env.heap_free = [this](uint64_t address) { heap_.release(address); };
    const ptx::Result r = ptx::run(*program, name, l, env);
    switch (r.outcome) {
      case ptx::Outcome::kOk:
        return wire::Outcome::kOk;
      case ptx::Outcome::kIllegalAddress:
      case ptx::Outcome::kTrap:
        // A failed assert prints CUDA's message; a plain trap or a null pointer says so.
        if (printed_ + r.message.size() + 1 <= wire::kMaxPrintfPerBatch) {
          printed_ += r.message.size() + 1;
          asserts_.append(r.message).append("\n");
        }
        if (r.outcome == ptx::Outcome::kIllegalAddress) return wire::Outcome::kIllegalAddress;
        return r.message.find("Assertion") != std::string::npos ? wire::Outcome::kAssert
                                                                : wire::Outcome::kTrap;
      case ptx::Outcome::kUnsupported:
      case ptx::Outcome::kBadLaunch:
        refuse_once(name, r.message);
        return wire::Outcome::kNoImplementation;
    }
    return wire::Outcome::kNoImplementation;
  }

  // Why the interpreter cannot run a kernel, on the program's stderr, once.
  void refuse_once(std::string_view name, const std::string& why) {
    if (!refused_.emplace(name).second) return;
    asserts_.append("vgpu: kernel ").append(name).append(": the sim backend's PTX interpreter cannot run it: ")
        .append(why).append("\n");
  }

  // Lets kernels_ be searched by string_view without building a string.
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  std::vector<void*> plugins_;
  WorkerPtx ptx_;  // the modules' PTX, for kernels no plug-in implements
  DeviceHeap heap_;  // malloc and free in interpreted kernels
  std::set<std::string, std::less<>> refused_;  // kernels the interpreter refused (said once)
  std::unordered_map<std::string, vgpu_sim_kernel_fn, NameHash, std::equal_to<>>
      kernels_;  // misses cached as nullptr
  size_t offsets_[wire::kMaxBatch] = {};  // of each record in the batch being run
  std::map<std::pair<uint64_t, std::string>, uint64_t> symbols_;  // (module, name) -> address
  std::unordered_map<std::string, uint64_t> by_name_;            // any module, last wins
  std::unordered_map<uint64_t, TextureDesc> textures_;            // texture and surface objects
  uint64_t current_module_ = 0;
  alignas(16) uint8_t params_[wire::kMaxParamBytes + 4] = {};
  std::string printf_;   // the batch's printf output not yet sent
  std::string asserts_;  // and its failed asserts' messages
  bool assert_failed_ = false;  // in the launch running now
  size_t printed_ = 0;   // bytes of it this batch, sent or not
  alignas(8) uint8_t printf_packet_[sizeof(wire::Printf) + wire::kMaxPrintfChunk] = {};
};

bool parse_hex(const char* s, uint64_t* out) {
  char* end = nullptr;
  errno = 0;
  *out = std::strtoull(s, &end, 16);
  return errno == 0 && end && *end == '\0' && end != s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || fcntl(wire::kSocketFd, F_GETFD) < 0) {
    std::fprintf(stderr,
                 "vgpu-sim-worker: started by vgpud's sim backend, not by hand\n"
                 "usage: vgpu-sim-worker run BASE SPAN THREADS [PLUGIN...] | check [PLUGIN...]\n");
    return 2;
  }
  const bool check = std::strcmp(argv[1], "check") == 0;
  int first_plugin = 2;
  if (!check) {
    uint64_t base = 0, span = 0;
    char* end = nullptr;
    if (std::strcmp(argv[1], "run") != 0 || argc < 5 || !parse_hex(argv[2], &base) ||
        !parse_hex(argv[3], &span)) {
      report_and_exit(false, "bad arguments");
    }
    const unsigned long threads = std::strtoul(argv[4], &end, 10);
    if (*end != '\0' || threads == 0 || threads > 1024) report_and_exit(false, "bad thread count");
    g_interpreter_threads = static_cast<unsigned>(threads);
    first_plugin = 5;
    void* want = reinterpret_cast<void*>(base);
    void* got = mmap(want, span, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_NORESERVE | MAP_FIXED_NOREPLACE, wire::kMemFd, 0);
    if (got != want) {
      char msg[200];
      std::snprintf(msg, sizeof msg,
                    "cannot map device memory at 0x%" PRIx64 " (+0x%" PRIx64 "): %s", base, span,
                    got == MAP_FAILED ? std::strerror(errno) : "address already in use");
      if (got != MAP_FAILED) munmap(got, span);
      report_and_exit(false, msg);
    }
    close(wire::kMemFd);  // the mapping keeps the memory
  }
  static Worker worker;  // static: its 32 KiB param buffer stays off the stack
  for (int i = first_plugin; i < argc; ++i) {
    std::string error;
    if (!worker.load(argv[i], &error)) report_and_exit(false, error);
  }
  if (check) report_and_exit(true, "");
  // From here on the worker runs guest-chosen work: only what that needs.
  if (std::string why; !sim::enter_sandbox(&why)) report_and_exit(false, why);

  install_fault_handlers();
  std::thread(watch_backend).detach();
  wire::Ready ready;
  ready.ok = 1;
  if (!send_packet(&ready, sizeof ready)) return 0;
  worker.serve();
}
