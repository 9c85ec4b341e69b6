// allocator_mismatch: frees with the other allocator (new[] released with
// operator delete), as some public samples do (NVIDIA's SobolQRNG). Undefined
// behaviour that glibc tolerates, so the program runs natively; run through
// vgpu-run it must run too, whatever vgpu's own libraries are built with.
#include <cstdio>
#include <new>

int main() {
  int* values = new int[16];
  values[3] = 7;
  const bool ok = values[3] == 7;
  ::operator delete(values);
  std::printf("%s allocator_mismatch\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
