// The SQL layer's transactions, on either engine: a change is all or
// nothing even when its BEGIN fails (another writer holds the lock past the
// timeout, the database is read-only, the server is gone).
#include <catch2/catch.hpp>

#include "sql.h"
#include "temp_db.h"

using namespace vgpu::policy;

TEST_CASE("a transaction that cannot begin lets nothing run on its connection") {
  test::TempDb file;
  std::string why;
  sql::Db db, other;
  REQUIRE(file.open_raw(&db, &why));
  REQUIRE(db.exec("CREATE TABLE t(x INTEGER)"));
  REQUIRE(file.open_raw(&other, &why));
  db.set_lock_timeout(1);
  {
    auto held = std::make_unique<sql::Transaction>(other);  // another writer holds the lock
    REQUIRE(held->began());
    sql::Transaction tx(db);
    REQUIRE_FALSE(tx.began());
    // The lock is free again: a statement run now outside the transaction
    // would commit on its own, half of a change that failed.
    REQUIRE(held->commit());
    held.reset();
    sql::Stmt insert(db, "INSERT INTO t VALUES(1)");
    CHECK(insert.step() != sql::kDone);
    CHECK_FALSE(db.exec("INSERT INTO t VALUES(2)", &why));
    CHECK_THAT(why, Catch::Contains("could not begin"));
  }
  // Given up: the connection works again, and nothing of the above landed.
  sql::Stmt count(db, "SELECT count(*) FROM t");
  REQUIRE(count.step() == sql::kRow);
  CHECK(count.int64(0) == 0);
  sql::Transaction next(db);
  CHECK(next.began());
}

TEST_CASE("a transaction's changes land together or not at all") {
  test::TempDb file;
  std::string why;
  sql::Db db;
  REQUIRE(file.open_raw(&db, &why));
  REQUIRE(db.exec("CREATE TABLE t(x INTEGER NOT NULL)"));
  {
    sql::Transaction tx(db);
    REQUIRE(tx.began());
    sql::Stmt good(db, "INSERT INTO t VALUES(?1)");
    REQUIRE(good.bind(1, int64_t{1}).step() == sql::kDone);
    sql::Stmt bad(db, "INSERT INTO t VALUES(NULL)");
    CHECK(bad.step() != sql::kDone);
    // Not committed: rolled back when it ends.
  }
  sql::Stmt count(db, "SELECT count(*) FROM t");
  REQUIRE(count.step() == sql::kRow);
  CHECK(count.int64(0) == 0);
  {
    sql::Transaction tx(db);
    REQUIRE(tx.began());
    sql::Stmt good(db, "INSERT INTO t VALUES(?1)");
    REQUIRE(good.bind(1, int64_t{2}).step() == sql::kDone);
    CHECK(db.changes() == 1);
    REQUIRE(tx.commit());
  }
  sql::Stmt sum(db, "SELECT coalesce(sum(x), 0), count(*) > 0 FROM t");
  REQUIRE(sum.step() == sql::kRow);
  CHECK(sum.int64(0) == 2);
  CHECK(sum.int64(1) == 1);  // a boolean reads as 1 or 0 on both engines
}
