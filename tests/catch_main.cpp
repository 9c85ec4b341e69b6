// The one Catch2 main of every test binary. Before the tests run, it keeps
// the daemons they start from reading a vgpud.toml installed on this host
// (VGPU_CONFIG=none: vgpud reads no configuration file unless given --config),
// so a host's own configuration cannot change what a test sees.
#define CATCH_CONFIG_RUNNER
#include <stdlib.h>

#include <catch2/catch.hpp>

int main(int argc, char** argv) {
  setenv("VGPU_CONFIG", "none", 0);  // a caller's own choice stands
  return Catch::Session().run(argc, argv);
}
