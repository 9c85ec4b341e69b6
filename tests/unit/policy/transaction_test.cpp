// The SQLite wrapper's transactions: a change is all or nothing even when its
// BEGIN fails (the database is busy past the timeout, or read-only).
#include <catch2/catch.hpp>

#include "sqlite.h"
#include "temp_db.h"

using namespace vgpu::policy;

TEST_CASE("a transaction that cannot begin lets nothing run on its connection") {
  test::TempDb file;
  std::string why;
  sql::Db db, other;
  REQUIRE(db.open(file.path, &why));
  REQUIRE(db.exec("CREATE TABLE t(x INTEGER)"));
  REQUIRE(other.open(file.path, &why));
  REQUIRE(other.exec("BEGIN IMMEDIATE"));  // another writer holds the lock
  db.set_busy_timeout(0);
  {
    sql::Transaction tx(db);
    REQUIRE_FALSE(tx.began());
    // The lock is free again: a statement run now outside the transaction
    // would commit on its own, half of a change that failed.
    REQUIRE(other.exec("COMMIT"));
    sql::Stmt insert(db, "INSERT INTO t VALUES(1)");
    CHECK(insert.step() == SQLITE_ABORT);
    CHECK_FALSE(db.exec("INSERT INTO t VALUES(2)", &why));
    CHECK_THAT(why, Catch::Contains("could not begin"));
  }
  // Given up: the connection works again, and nothing of the above landed.
  sql::Stmt count(db, "SELECT count(*) FROM t");
  REQUIRE(count.step() == SQLITE_ROW);
  CHECK(count.int64(0) == 0);
  sql::Transaction next(db);
  CHECK(next.began());
}
