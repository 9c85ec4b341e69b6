// TenantCounters: a VM is listed while it has a channel (admitted or waiting
// to be) or something on record, and forgotten otherwise.
#include <catch2/catch.hpp>

#include "vgpu/host/tenant_counters.h"

using namespace vgpu::host;

TEST_CASE("a VM is listed while connected or waiting, and kept once it misbehaved") {
  TenantCounters c;
  c.opened(1, "vm1");
  c.opened(1, "vm1");
  c.waits(2, "vm2");  // a real VM refused as unassigned: its channel is kept
  auto s = c.snapshot();
  REQUIRE(s.size() == 2);
  CHECK(s[1].channels == 2);
  CHECK(s[1].waiting == 0);
  CHECK(s[2].vm == "vm2");
  CHECK(s[2].channels == 0);
  CHECK(s[2].waiting == 1);

  c.closed(1);
  CHECK(c.snapshot()[1].channels == 1);
  c.closed(1);
  CHECK(c.snapshot().count(1) == 0);  // nothing on record: forgotten

  // Admitted: the wait ends and the channel counts as open.
  c.waited(2);
  c.opened(2, "vm2");
  s = c.snapshot();
  CHECK(s[2].waiting == 0);
  CHECK(s[2].channels == 1);

  // A VM that misbehaved stays listed after it goes, with what it did.
  c.refused(2);
  c.closed(2);
  s = c.snapshot();
  REQUIRE(s.count(2) == 1);
  CHECK(s[2].refused == 1);
  CHECK(c.totals().refused == 1);

  // A wait that ends with the channel closed, never admitted.
  c.waits(3, "vm3");
  c.waited(3);
  CHECK(c.snapshot().count(3) == 0);
  c.waited(3);  // nothing to end: no underflow, nothing listed
  c.closed(4);
  CHECK(c.snapshot().count(3) == 0);
  CHECK(c.snapshot().count(4) == 0);
}
