// The usage spool: batches kept in a file of the host's own while the
// database cannot take them, handed back oldest first, across reopening.
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include "temp_db.h"
#include "vgpu/policy/usage_spool.h"

using namespace vgpu;
using namespace vgpu::policy;

TEST_CASE("the spool keeps batches in order across reopening until each is removed", "[sqlite]") {
  policy::test::TempDb file;
  UsageRecord r{7, 3600, 100, 2, 3, 4, 5, 9};
  r.host = "node1";
  r.gpu = 2;
  {
    std::unique_ptr<UsageSpool> spool;
    REQUIRE(open_usage_spool(file.path, &spool).ok());
    int64_t batches = -1, max_seq = -1;
    REQUIRE(spool->pending(&batches, &max_seq).ok());
    CHECK(batches == 0);
    CHECK(max_seq == 0);
    struct stat st {};
    REQUIRE(stat(file.path.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);  // the daemon's alone
    UsageRecord second = r;
    second.tenant = 8;
    REQUIRE(spool->put(20, std::vector{r, second}).ok());
    REQUIRE(spool->put(30, std::vector{r}).ok());
  }
  std::unique_ptr<UsageSpool> spool;
  REQUIRE(open_usage_spool(file.path, &spool).ok());
  int64_t batches = 0, max_seq = 0, seq = 0;
  REQUIRE(spool->pending(&batches, &max_seq).ok());
  CHECK(batches == 2);
  CHECK(max_seq == 30);
  std::vector<UsageRecord> got;
  REQUIRE(spool->oldest(&seq, &got).ok());
  CHECK(seq == 20);
  REQUIRE(got.size() == 2);
  CHECK(got[0].tenant + got[1].tenant == 15);
  CHECK(got[0].host == "node1");
  CHECK(got[0].gpu == 2);
  CHECK(got[0].gpu_ns == 100);
  CHECK(got[0].kernels == 2);
  CHECK(got[0].bytes_to_device == 3);
  CHECK(got[0].bytes_from_device == 4);
  CHECK(got[0].peak_memory == 5);
  CHECK(got[0].student == 9);
  REQUIRE(spool->remove(20).ok());
  REQUIRE(spool->oldest(&seq, &got).ok());
  CHECK(seq == 30);
  REQUIRE(spool->remove(30).ok());
  REQUIRE(spool->oldest(&seq, &got).ok());
  CHECK(seq == 0);
  CHECK(got.empty());
  // The highest number given stays known with nothing kept.
  REQUIRE(spool->pending(&batches, &max_seq).ok());
  CHECK(batches == 0);
  CHECK(max_seq == 30);
}

TEST_CASE("a spool that cannot be made is a clear error", "[sqlite]") {
  std::unique_ptr<UsageSpool> spool;
  const Result r = open_usage_spool("/nonexistent-vgpu-dir/spool.db", &spool);
  CHECK(r.code() == Result::Code::kStorage);
  CHECK_THAT(r.message(), Catch::Contains("usage spool"));
}

TEST_CASE("a batch set aside leaves the queue and is kept with why", "[sqlite]") {
  policy::test::TempDb file;
  std::unique_ptr<UsageSpool> spool;
  REQUIRE(open_usage_spool(file.path, &spool).ok());
  UsageRecord r{7, 3600, 100, 2, 3, 4, 5, 9};
  REQUIRE(spool->put(20, std::vector{r}).ok());
  REQUIRE(spool->put(30, std::vector{r}).ok());
  REQUIRE(spool->set_aside(20, "refused").ok());
  int64_t seq = 0;
  std::vector<UsageRecord> got;
  REQUIRE(spool->oldest(&seq, &got).ok());
  CHECK(seq == 30);
  int64_t batches = 0, max_seq = 0;
  REQUIRE(spool->pending(&batches, &max_seq).ok());
  CHECK(batches == 1);
  CHECK(max_seq == 30);
  sql::Db db;
  std::string why;
  REQUIRE(db.open(file.path, &why));
  sql::Stmt kept(db,
                 "SELECT count(*), (SELECT why FROM set_aside_why WHERE seq = 20) "
                 "FROM set_aside WHERE seq = 20");
  REQUIRE(kept.step() == sql::kRow);
  CHECK(kept.int64(0) == 1);
  CHECK(kept.text(1) == "refused");
}
