// The host memory a tenant's modules hold is charged to that tenant, all its
// contexts together, against --tenant-host-mib: a guest that loads modules
// until the host runs out is refused instead (issue 23, item 2).
#include "sim_test_support.h"
#include "vgpu/fatbin/fatbin.h"

using namespace vgpu;
using namespace vgpu::executor;
using namespace vgpu::executor::test;

namespace {

uint64_t parsed_bytes(const std::vector<uint8_t>& image) {
  fatbin::Module m;
  REQUIRE(fatbin::parse(image, &m) == fatbin::Error::kNone);
  return fatbin::host_bytes(m);
}

}  // namespace

TEST_CASE("sim: a tenant's modules hold no more host memory than its limit") {
  const std::vector<uint8_t> image = fixture_fatbin();
  const uint64_t parsed = parsed_bytes(image);
  REQUIRE(parsed > 1000);  // names, layouts, initial values, indexes
  // And its PTX, for the interpreter: kept while it fits, else left out.
  std::string ptx;
  REQUIRE(fatbin::ptx_text(image, 1u << 30, &ptx) == fatbin::Error::kNone);
  const uint64_t each = parsed + ptx.size();
  SimConfig config = test_config();
  config.tenant_host_limit = 3 * each + parsed / 2;  // room for three, not a fourth even without PTX
  auto b = make_backend(config);
  const ContextId first = new_context(*b, 1), second = new_context(*b, 1);
  const ContextId other = new_context(*b, 2);

  Handle m[4] = {};
  REQUIRE(b->module_load(first, image, &m[0]) == Status::kSuccess);
  REQUIRE(b->module_load(first, image, &m[1]) == Status::kSuccess);
  REQUIRE(b->module_load(second, image, &m[2]) == Status::kSuccess);
  // The tenant's other context counts as well.
  CHECK(b->module_load(second, image, &m[3]) == Status::kMemoryAllocation);
  CHECK(b->module_load(first, image, &m[3]) == Status::kMemoryAllocation);

  // Another tenant has a limit of its own.
  Handle theirs[3] = {};
  for (Handle& h : theirs) CHECK(b->module_load(other, image, &h) == Status::kSuccess);

  // Unloading a module gives its bytes back...
  REQUIRE(run(*b, first, UnloadModule{m[0]}).status == Status::kSuccess);
  CHECK(b->module_load(second, image, &m[3]) == Status::kSuccess);
  CHECK(b->module_load(second, image, &m[0]) == Status::kMemoryAllocation);
  // ...and so does the end of a context, with every module it held.
  b->destroy_context(second);
  CHECK(b->module_load(first, image, &m[0]) == Status::kSuccess);
  CHECK(b->module_load(first, image, &m[2]) == Status::kSuccess);
  CHECK(b->module_load(first, image, &m[3]) == Status::kMemoryAllocation);
}

TEST_CASE("sim: a limit of 0 leaves module memory unbounded") {
  const std::vector<uint8_t> image = fixture_fatbin();
  SimConfig config = test_config();
  config.tenant_host_limit = 0;
  auto b = make_backend(config);
  const ContextId ctx = new_context(*b, 1);
  for (int i = 0; i < 20; ++i) {
    Handle h = 0;
    REQUIRE(b->module_load(ctx, image, &h) == Status::kSuccess);
  }
}
