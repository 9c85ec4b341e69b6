// idle_vm [SECONDS]: a VM that attaches and then does nothing: one call
// (cudaGetDeviceCount, which connects and creates its context on the host),
// prints "ready", and sleeps SECONDS (default 3600) or until killed.
#include <unistd.h>

#include "bench_program.h"

int main(int argc, char** argv) {
  const long seconds = bp::arg(argc, argv, 1, 3600);
  int count = 0;
  BP_OK(cudaGetDeviceCount(&count));
  std::printf("ready\n");
  std::fflush(stdout);
  sleep(static_cast<unsigned>(seconds));
  return 0;
}
