#include "worker_sandbox.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

// The filter forbids ptrace, which LeakSanitizer needs when a Debug worker
// exits: its leak check would fail the worker's exit instead.
extern "C" const char* __lsan_default_options() { return "detect_leaks=0"; }

namespace vgpu::executor::sim {
namespace {

// What serving launches needs once the plug-ins are loaded: memory, the
// backend's socket (messages and passed descriptors), signals to itself
// (faults are reported by a handler), time, and threads.
constexpr const char* kAllowed[] = {
    "read", "write", "readv", "writev", "pread64", "pwrite64",
    "recvmsg", "sendmsg", "recvfrom", "sendto", "close", "poll", "ppoll",
    "mmap", "munmap", "mprotect", "mremap", "madvise", "brk",
    "futex", "set_robust_list", "get_robust_list", "rseq",
    "exit", "exit_group", "rt_sigreturn", "rt_sigaction", "rt_sigprocmask", "sigaltstack",
    "getpid", "gettid", "getuid", "geteuid", "getgid", "getegid",
    "clock_gettime", "clock_getres", "clock_nanosleep", "nanosleep", "gettimeofday",
    "sched_yield", "sched_getaffinity", "getcpu",
    "fstat", "lseek", "fcntl", "getrandom", "getrlimit", "uname",
    // The sanitizers test whether memory is readable by writing it to a pipe.
    "pipe", "pipe2",
};

constexpr int kLoggedRefusals = 8;  // then quiet: a hostile guest could ask forever
std::atomic<int> g_refusals{0};
const char* g_names[512];  // syscall names, resolved before the filter is on

// A refused call: log its name (the first few), and make it fail with EPERM
// as if the filter said so, so that code which checks errors goes on.
void on_sigsys(int, siginfo_t* info, void* context) {
  const int nr = info->si_syscall;
  if (g_refusals.fetch_add(1, std::memory_order_relaxed) < kLoggedRefusals) {
    char line[160];
    const char* name = nr >= 0 && nr < 512 && g_names[nr] ? g_names[nr] : "?";
    const int n = std::snprintf(line, sizeof line,
                                "vgpu-sim-worker[%d]: sandbox: refused system call %s (%d)\n",
                                static_cast<int>(getpid()), name, nr);
    if (n > 0) (void)!write(STDERR_FILENO, line, static_cast<size_t>(n));
  }
  auto* uc = static_cast<ucontext_t*>(context);
#if defined(__x86_64__)
  uc->uc_mcontext.gregs[REG_RAX] = -EPERM;
#elif defined(__aarch64__)
  uc->uc_mcontext.regs[0] = static_cast<uint64_t>(-EPERM);
#else
#error "the sim worker's sandbox knows x86-64 and AArch64"
#endif
}

bool fail(std::string* why, const char* step, int err) {
  *why = std::string("sandbox: ") + step + ": " + std::strerror(err < 0 ? -err : err);
  return false;
}

// An empty directory, already deleted, as the root: every file the worker
// needs is open or mapped by now.
bool enter_empty_root(std::string* why) {
  char dir[] = "/tmp/vgpu-sim-worker-XXXXXX";
  if (!mkdtemp(dir)) return fail(why, "mkdtemp", errno);
  const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  const int err = errno;
  rmdir(dir);
  if (fd < 0) return fail(why, "open its empty root", err);
  const bool rooted = fchdir(fd) == 0 && chroot(".") == 0 && chdir("/") == 0;
  const int root_err = errno;
  close(fd);
  return rooted || fail(why, "chroot", root_err);
}

// Started as root (a vgpud run as root): the unprivileged user, looked up
// before the empty root hides /etc/passwd.
bool find_unprivileged(uid_t* uid, gid_t* gid, std::string* why) {
  const passwd* pw = getpwnam("vgpu");
  if (!pw) pw = getpwnam("nobody");
  if (!pw) {
    *why = "sandbox: neither a `vgpu` nor a `nobody` user to run as";
    return false;
  }
  *uid = pw->pw_uid;
  *gid = pw->pw_gid;
  return true;
}

// Then that user, for good.
bool drop_root(uid_t uid, gid_t gid, std::string* why) {
  if (setgroups(0, nullptr) != 0) return fail(why, "setgroups", errno);
  if (setresgid(gid, gid, gid) != 0) return fail(why, "setresgid", errno);
  if (setresuid(uid, uid, uid) != 0) return fail(why, "setresuid", errno);
  if (setuid(0) == 0) {  // dropped for good, or not at all
    *why = "sandbox: could get root back after dropping it";
    return false;
  }
  return true;
}

bool has_effective(int capability) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3]{};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  return (data[capability / 32].effective & (1u << (capability % 32))) != 0;
}

// Not root: whatever capabilities vgpud passed on (its unit gives it
// CAP_SYS_CHROOT as an ambient capability, for the empty root) are given up.
// capset is per thread: this is the thread that serves, and threads it starts
// inherit its empty sets; one a plug-in started earlier keeps its own, which
// the filter makes useless (it denies chroot and every file call).
bool drop_capabilities(std::string* why) {
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
    return fail(why, "clear ambient capabilities", errno);
  }
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3]{};
  if (syscall(SYS_capset, &header, none) != 0) return fail(why, "capset", errno);
  return true;
}

bool install_filter(std::string* why) {
  for (int nr = 0; nr < 512; ++nr) {
    g_names[nr] = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);  // kept: read in the handler
  }
  struct sigaction sa {};
  sa.sa_sigaction = on_sigsys;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGSYS, &sa, nullptr) != 0) return fail(why, "SIGSYS handler", errno);

  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_TRAP);
  if (!ctx) return fail(why, "seccomp_init", ENOMEM);
  int rc = 0;
  const auto allow = [&](const char* name) {
    const int nr = seccomp_syscall_resolve_name(name);
    if (nr != __NR_SCMP_ERROR && rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
  };
  for (const char* name : kAllowed) allow(name);
  const pid_t self = getpid();
  if (rc == 0) {
    // Threads only: a clone without CLONE_THREAD would be a new process.
    rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                          SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD));
  }
  // clone3's flags are in memory, out of the filter's reach: "not here",
  // and glibc falls back to clone.
  if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
  // fstat() is fstatat(fd, "", AT_EMPTY_PATH) in recent glibc: no path.
  if (rc == 0) {
    rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(newfstatat), 1,
                          SCMP_A3(SCMP_CMP_MASKED_EQ, AT_EMPTY_PATH, AT_EMPTY_PATH));
  }
  if (rc == 0) {
    rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(statx), 1,
                          SCMP_A2(SCMP_CMP_MASKED_EQ, AT_EMPTY_PATH, AT_EMPTY_PATH));
  }
  // Signals to itself only (a fault handler re-raises; abort()).
  if (rc == 0) {
    rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1,
                          SCMP_A0(SCMP_CMP_EQ, static_cast<scmp_datum_t>(self)));
  }
  if (rc == 0) {
    rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(kill), 1,
                          SCMP_A0(SCMP_CMP_EQ, static_cast<scmp_datum_t>(self)));
  }
  // Reading its limits (the sanitizers do), never setting them.
  if (rc == 0) {
    rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prlimit64), 1, SCMP_A2(SCMP_CMP_EQ, 0));
  }
  // Every thread, the ones already running too.
  if (rc == 0) rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
  if (rc == 0) rc = seccomp_load(ctx);
  seccomp_release(ctx);
  return rc == 0 || fail(why, "seccomp filter", rc);
}

}  // namespace

bool enter_sandbox(std::string* why) {
  if (const char* off = std::getenv("VGPU_WORKER_SANDBOX"); off && std::strcmp(off, "off") == 0) {
    std::fprintf(stderr, "vgpu-sim-worker[%d]: VGPU_WORKER_SANDBOX=off: running unconfined\n",
                 static_cast<int>(getpid()));
    return true;
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return fail(why, "no_new_privs", errno);
  if (geteuid() == 0) {
    uid_t uid = 0;
    gid_t gid = 0;
    if (!find_unprivileged(&uid, &gid, why) || !enter_empty_root(why) || !drop_root(uid, gid, why)) {
      return false;
    }
  } else {
    if (has_effective(CAP_SYS_CHROOT) && !enter_empty_root(why)) return false;
    if (!drop_capabilities(why)) return false;
  }
  return install_filter(why);
}

}  // namespace vgpu::executor::sim
