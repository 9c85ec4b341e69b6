// The default database path: somewhere a reboot does not clear, per user.
#include <catch2/catch.hpp>

#include "db_path.h"

using vgpu::cli::default_db_path;

TEST_CASE("root keeps the database under /var/lib, whatever its environment says") {
  CHECK(default_db_path(true, "/home/x/.state", "/root") == "/var/lib/vgpu/vgpu.db");
  CHECK(default_db_path(true, nullptr, nullptr) == "/var/lib/vgpu/vgpu.db");
}

TEST_CASE("a user keeps it in XDG_STATE_HOME, else in ~/.local/state") {
  CHECK(default_db_path(false, "/s", "/home/t") == "/s/vgpu/vgpu.db");
  CHECK(default_db_path(false, nullptr, "/home/t") == "/home/t/.local/state/vgpu/vgpu.db");
  CHECK(default_db_path(false, "", "/home/t") == "/home/t/.local/state/vgpu/vgpu.db");
  // A relative XDG_STATE_HOME is invalid (XDG Base Directory spec): ignored.
  CHECK(default_db_path(false, "state", "/home/t") == "/home/t/.local/state/vgpu/vgpu.db");
}

TEST_CASE("a user with no home has no default") {
  CHECK(default_db_path(false, nullptr, nullptr).empty());
  CHECK(default_db_path(false, "relative", "").empty());
}
