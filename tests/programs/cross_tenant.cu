// cross_tenant: one tenant must never see or touch another's device memory.
// Run as two processes, each in a different (simulated) VM:
//
//   cross_tenant owner FILE   allocates 1 MiB, fills it with a secret pattern,
//                             writes "0x<device pointer> <size>" to FILE
//                             (atomically, via FILE.tmp), waits until FILE is
//                             removed (at most 60 s), then checks its secret
//                             is still intact and exits 0.
//   cross_tenant thief FILE   reads the pointer and tries, in order:
//                             cudaMemcpy D2H from it, cudaMemcpy D2D from it into
//                             its own buffer, cudaMemset on it, cudaFree of it,
//                             and a kernel (steal) copying from it into its own
//                             buffer. Every call must fail; PASS only if every
//                             one returned an error and no secret word was ever
//                             observed. The kernel goes last: on a GPU it faults
//                             and the thief's context is lost.
//
// The harness starts the owner, waits for FILE, runs the thief, removes FILE
// and waits for the owner.
//
//   cross_tenant leave MIB      fills MIB MiB with the secret and exits
//                               without freeing them.
//   cross_tenant scavenge MIB   run next in another VM: allocates MIB MiB and
//                               reads them; PASS only if no secret word is
//                               there (what one tenant left in device memory
//                               must never reach the next).
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include <sys/stat.h>

#include "common.h"

using u64 = unsigned long long;

__global__ void steal(const u64* src, u64* dst, u64 n) {
  u64 i = static_cast<u64>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i];
}

static const size_t kSize = 1 << 20;
static const size_t kWords = kSize / sizeof(u64);

// Word i of the secret: distinct, never zero.
static u64 secret_word(u64 i) {
  u64 z = i + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (z ^ (z >> 31)) | 1;
}

static bool file_exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

static int owner(const std::string& file) {
  std::vector<u64> secret(kWords);
  for (size_t i = 0; i < kWords; ++i) secret[i] = secret_word(i);
  u64* d = nullptr;
  CUDA_OK(cudaMalloc(&d, kSize));
  CUDA_OK(cudaMemcpy(d, secret.data(), kSize, cudaMemcpyHostToDevice));
  CUDA_OK(cudaDeviceSynchronize());

  const std::string tmp = file + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) vt::fail("cannot write %s: %s", tmp.c_str(), std::strerror(errno));
  std::fprintf(f, "0x%llx %zu\n", static_cast<u64>(reinterpret_cast<uintptr_t>(d)), kSize);
  if (std::fclose(f) != 0 || std::rename(tmp.c_str(), file.c_str()) != 0)
    vt::fail("cannot publish %s: %s", file.c_str(), std::strerror(errno));
  std::printf("owner: secret of %zu bytes at %p, published in %s\n", kSize, static_cast<void*>(d),
              file.c_str());

  auto start = std::chrono::steady_clock::now();
  while (file_exists(file)) {
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(60)) {
      std::printf("owner: %s still there after 60 s, stopping anyway\n", file.c_str());
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }

  std::vector<u64> back(kWords, 0);
  CUDA_OK(cudaMemcpy(back.data(), d, kSize, cudaMemcpyDeviceToHost));
  size_t changed = 0;
  for (size_t i = 0; i < kWords; ++i) changed += back[i] != secret[i];
  vt::check(changed == 0, "owner: secret intact after the thief ran (%zu of %zu words changed)",
            changed, kWords);
  CUDA_OK(cudaFree(d));
  vt::pass();
}

struct Thief {
  std::unordered_set<u64> secret;
  bool leaked = false;
  int errors = 0, attempts = 0;

  Thief() {
    for (size_t i = 0; i < kWords; ++i) secret.insert(secret_word(i));
  }

  // Counts the secret's words in bytes the thief got back.
  void inspect(const char* what, const std::vector<u64>& data) {
    size_t hits = 0;
    for (u64 w : data) hits += secret.count(w);
    if (hits) {
      leaked = true;
      std::printf("LEAK %s: %zu secret words observed\n", what, hits);
    }
  }

  // One attempt: it must return an error.
  void attempt(const char* what, cudaError_t e) {
    ++attempts;
    if (e != cudaSuccess) {
      ++errors;
      std::printf("ok   %s -> %s\n", what, cudaGetErrorName(e));
    } else {
      std::printf("BAD  %s -> cudaSuccess\n", what);
    }
    cudaGetLastError();  // consume it, so the next attempt starts clean
  }
};

static int thief(const std::string& file) {
  FILE* f = std::fopen(file.c_str(), "r");
  if (!f) vt::fail("cannot read %s: %s", file.c_str(), std::strerror(errno));
  u64 addr = 0;
  size_t size = 0;
  int got = std::fscanf(f, "%llx %zu", &addr, &size);
  std::fclose(f);
  if (got != 2 || addr == 0 || size != kSize) vt::fail("%s does not hold \"0x<pointer> %zu\"", file.c_str(), kSize);
  u64* foreign = reinterpret_cast<u64*>(static_cast<uintptr_t>(addr));
  std::printf("thief: the owner's buffer is at %p\n", static_cast<void*>(foreign));

  Thief t;
  std::vector<u64> host(kWords, 0);

  // 1. Read it directly (explicit direction: cudaMemcpyDefault would take an
  // unknown pointer for host memory).
  t.attempt("cudaMemcpy D2H from the owner's pointer",
            cudaMemcpy(host.data(), foreign, kSize, cudaMemcpyDeviceToHost));
  t.inspect("cudaMemcpy D2H", host);

  // Our own buffer, never overlapping the owner's address (an address can be
  // valid in two processes for different memory; keep ours clear of it).
  std::vector<u64*> parked;
  u64* mine = nullptr;
  for (int tries = 0;; ++tries) {
    CUDA_OK(cudaMalloc(&mine, kSize));
    uintptr_t m = reinterpret_cast<uintptr_t>(mine), o = static_cast<uintptr_t>(addr);
    if (m + kSize <= o || o + kSize <= m) break;
    std::printf("thief: own allocation %p overlaps the owner's address, allocating again\n",
                static_cast<void*>(mine));
    parked.push_back(mine);
    if (tries > 8) vt::fail("cannot get an allocation clear of the owner's address");
  }
  CUDA_OK(cudaMemset(mine, 0, kSize));

  cudaError_t e;

  // 2. Copy it device to device into our buffer, then look.
  e = cudaMemcpy(mine, foreign, kSize, cudaMemcpyDeviceToDevice);
  if (e == cudaSuccess) e = cudaDeviceSynchronize();  // D2D may return before it runs
  t.attempt("cudaMemcpy D2D from the owner's pointer into our buffer", e);
  CUDA_OK(cudaMemcpy(host.data(), mine, kSize, cudaMemcpyDeviceToHost));
  t.inspect("cudaMemcpy D2D", host);

  // 3. Overwrite it.
  // (cudaMemset may return before it runs: a fault would show at the sync.)
  e = cudaMemset(foreign, 0, kSize);
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  t.attempt("cudaMemset on the owner's pointer", e);

  // 4. Free it.
  t.attempt("cudaFree of the owner's pointer", cudaFree(foreign));

  // 5. A kernel reading it. On a GPU this faults and takes our context with
  // it, so it goes last; the bytes are only looked at if it "succeeded".
  steal<<<static_cast<unsigned>((kWords + 255) / 256), 256>>>(foreign, mine, kWords);
  e = cudaGetLastError();
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  t.attempt("kernel copying from the owner's pointer", e);
  if (e == cudaSuccess) {
    std::fill(host.begin(), host.end(), 0);
    CUDA_OK(cudaMemcpy(host.data(), mine, kSize, cudaMemcpyDeviceToHost));
    t.inspect("steal kernel", host);
  }

  if (t.leaked) vt::fail("secret bytes were observed");
  if (t.errors != t.attempts)
    vt::fail("%d of %d attempts on the owner's memory returned cudaSuccess",
             t.attempts - t.errors, t.attempts);
  vt::check(true, "all %d attempts failed, no secret word observed", t.attempts);
  vt::pass();
}

static size_t parse_mib(const char* s) {
  char* end = nullptr;
  const unsigned long v = std::strtoul(s, &end, 10);
  if (end == s || *end || v == 0 || v > 4096) vt::fail("MIB must be 1 to 4096, not %s", s);
  return static_cast<size_t>(v) << 20;
}

static int leave(size_t bytes) {
  std::vector<u64> secret(kWords);
  for (size_t i = 0; i < kWords; ++i) secret[i] = secret_word(i);
  u64* d = nullptr;
  CUDA_OK(cudaMalloc(&d, bytes));
  for (size_t off = 0; off < bytes; off += kSize) {
    CUDA_OK(cudaMemcpy(reinterpret_cast<char*>(d) + off, secret.data(), std::min(kSize, bytes - off),
                       cudaMemcpyHostToDevice));
  }
  CUDA_OK(cudaDeviceSynchronize());
  vt::check(true, "left %zu MiB of secret words behind, not freed", bytes >> 20);
  vt::pass();  // exits with the memory still allocated
}

static int scavenge(size_t bytes) {
  Thief t;
  u64* d = nullptr;
  CUDA_OK(cudaMalloc(&d, bytes));
  std::vector<u64> host(kWords);
  size_t looked = 0;
  for (size_t off = 0; off < bytes; off += kSize) {
    const size_t n = std::min(kSize, bytes - off);
    std::fill(host.begin(), host.end(), 0);
    CUDA_OK(cudaMemcpy(host.data(), reinterpret_cast<char*>(d) + off, n, cudaMemcpyDeviceToHost));
    t.inspect("a fresh allocation", host);
    looked += n;
  }
  if (t.leaked) vt::fail("a fresh allocation held another tenant's secret words");
  vt::check(true, "no secret word in %zu MiB of fresh allocation", looked >> 20);
  CUDA_OK(cudaFree(d));
  vt::pass();
}

int main(int argc, char** argv) {
  vt::set_name("cross_tenant");
  if (argc == 3 && std::strcmp(argv[1], "leave") == 0) return leave(parse_mib(argv[2]));
  if (argc == 3 && std::strcmp(argv[1], "scavenge") == 0) return scavenge(parse_mib(argv[2]));
  if (argc == 3 && std::strcmp(argv[1], "owner") == 0) return owner(argv[2]);
  if (argc == 3 && std::strcmp(argv[1], "thief") == 0) return thief(argv[2]);
  std::fprintf(stderr, "usage: %s owner FILE | thief FILE | leave MIB | scavenge MIB\n", argv[0]);
  vt::fail("bad arguments");
}
