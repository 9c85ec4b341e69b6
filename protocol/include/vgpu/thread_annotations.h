// Clang's thread-safety analysis (-Wthread-safety): attributes that say which
// mutex guards what, checked at compile time, and a mutex, lock and condition
// variable the analysis understands (libstdc++'s std::mutex carries no
// annotations). On other compilers the attributes are empty.
//
// Here, in protocol's include folder but outside vgpu/protocol/ (it is not
// part of the wire format), because every module already links
// vgpu_protocol: no module gains a dependency by including it.
// scripts/thread-safety.sh builds the annotated libraries with the check on.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#if defined(__clang__)
#define VGPU_THREAD_ATTRIBUTE(x) __attribute__((x))
#else
#define VGPU_THREAD_ATTRIBUTE(x)
#endif

#define CAPABILITY(x) VGPU_THREAD_ATTRIBUTE(capability(x))
#define SCOPED_CAPABILITY VGPU_THREAD_ATTRIBUTE(scoped_lockable)
#define GUARDED_BY(x) VGPU_THREAD_ATTRIBUTE(guarded_by(x))
#define PT_GUARDED_BY(x) VGPU_THREAD_ATTRIBUTE(pt_guarded_by(x))
#define ACQUIRED_BEFORE(...) VGPU_THREAD_ATTRIBUTE(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) VGPU_THREAD_ATTRIBUTE(acquired_after(__VA_ARGS__))
#define REQUIRES(...) VGPU_THREAD_ATTRIBUTE(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) VGPU_THREAD_ATTRIBUTE(requires_shared_capability(__VA_ARGS__))
#define ACQUIRE(...) VGPU_THREAD_ATTRIBUTE(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) VGPU_THREAD_ATTRIBUTE(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) VGPU_THREAD_ATTRIBUTE(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) VGPU_THREAD_ATTRIBUTE(release_shared_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) VGPU_THREAD_ATTRIBUTE(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) VGPU_THREAD_ATTRIBUTE(locks_excluded(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) VGPU_THREAD_ATTRIBUTE(assert_capability(x))
#define RETURN_CAPABILITY(x) VGPU_THREAD_ATTRIBUTE(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS VGPU_THREAD_ATTRIBUTE(no_thread_safety_analysis)

namespace vgpu {

// std::mutex, annotated.
class CAPABILITY("mutex") Mutex {
 public:
  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // The mutex itself, for std::condition_variable (CondVar). Taking or
  // releasing it through this escapes the analysis.
  std::mutex& native() { return mu_; }

 private:
  std::mutex mu_;
};

// std::shared_mutex, annotated: lock() to write, lock_shared() to read.
class CAPABILITY("mutex") SharedMutex {
 public:
  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  void lock_shared() ACQUIRE_SHARED() { mu_.lock_shared(); }
  void unlock_shared() RELEASE_SHARED() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

// Holds a Mutex (or a SharedMutex exclusively) for its scope; unlock() and
// lock() let it go and take it again within that scope.
template <class M>
class SCOPED_CAPABILITY BasicLock {
 public:
  explicit BasicLock(M& mu) ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~BasicLock() RELEASE() {
    if (held_) mu_.unlock();
  }
  BasicLock(const BasicLock&) = delete;
  BasicLock& operator=(const BasicLock&) = delete;

  void lock() ACQUIRE() {
    mu_.lock();
    held_ = true;
  }
  void unlock() RELEASE() {
    mu_.unlock();
    held_ = false;
  }

 private:
  M& mu_;
  bool held_ = true;
};
using MutexLock = BasicLock<Mutex>;
using WriterLock = BasicLock<SharedMutex>;

// Holds a SharedMutex shared (to read) for its scope.
class SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex& mu) ACQUIRE_SHARED(mu) : mu_(mu) { mu_.lock_shared(); }
  ~ReaderLock() RELEASE() { mu_.unlock_shared(); }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  SharedMutex& mu_;
};

// std::condition_variable over a Mutex the caller holds. A wait lets the
// mutex go and takes it again before it returns, so to the analysis it stays
// held. A predicate that reads what the mutex guards says so:
// `[&]() REQUIRES(mu_) { ... }`.
class CondVar {
 public:
  void notify_one() noexcept { cv_.notify_one(); }
  void notify_all() noexcept { cv_.notify_all(); }

  void wait(Mutex& mu) REQUIRES(mu) {
    Adopted lock(mu);
    cv_.wait(lock.held);
  }
  // Until notified or `d` has passed (or spuriously): the caller re-checks.
  template <class Rep, class Period>
  void wait_for(Mutex& mu, const std::chrono::duration<Rep, Period>& d) REQUIRES(mu) {
    Adopted lock(mu);
    cv_.wait_for(lock.held, d);
  }
  template <class Rep, class Period, class Pred>
  bool wait_for(Mutex& mu, const std::chrono::duration<Rep, Period>& d, Pred pred) REQUIRES(mu) {
    Adopted lock(mu);
    return cv_.wait_for(lock.held, d, std::move(pred));
  }

 private:
  // The caller's hold on the mutex as the std::unique_lock the wait needs;
  // handed back (not unlocked) at the end.
  struct Adopted {
    explicit Adopted(Mutex& mu) : held(mu.native(), std::adopt_lock) {}
    ~Adopted() { held.release(); }
    std::unique_lock<std::mutex> held;
  };
  std::condition_variable cv_;
};

}  // namespace vgpu
