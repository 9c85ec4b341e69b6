// Small RAII wrappers over the SQLite C API: a connection and a statement.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace vgpu::policy::sql {

class Db {
 public:
  Db() = default;
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  // Opens or creates the file; WAL mode, foreign keys on, a busy timeout.
  bool open(const std::string& path, std::string* why);
  // Opens an existing file for reading only (no journal-mode change, no writes).
  bool open_read_only(const std::string& path, std::string* why);
  bool exec(std::string_view sql, std::string* why = nullptr);
  sqlite3* raw() const { return db_; }
  std::string error() const;
  // How long a statement waits for another connection's write lock.
  void set_busy_timeout(int ms) { sqlite3_busy_timeout(db_, ms); }
  // While a Transaction that failed to begin is alive, nothing runs on this
  // connection (statements answer SQLITE_ABORT, exec fails): run outside the
  // transaction, each statement would commit on its own, and a change
  // meant to be all or nothing could land in part.
  bool refusing() const { return unbegun_ > 0; }

 private:
  friend class Transaction;
  sqlite3* db_ = nullptr;
  int unbegun_ = 0;  // Transactions alive whose BEGIN failed
};

class Stmt {
 public:
  Stmt(const Db& db, std::string_view sql);
  ~Stmt();
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  bool ok() const { return stmt_ != nullptr; }
  Stmt& bind(int index, int64_t v);
  Stmt& bind(int index, std::string_view v);
  Stmt& bind_null(int index);
  // SQLITE_ROW, SQLITE_DONE or an error code.
  int step();
  void reset();
  int64_t int64(int column) const { return sqlite3_column_int64(stmt_, column); }
  bool is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
  std::string text(int column) const;

 private:
  const Db& db_;
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN IMMEDIATE ... COMMIT, rolled back if not committed. If BEGIN fails
// (another writer held the database past the busy timeout, the disk is
// read-only), began() is false and the connection refuses every statement
// until this is destroyed (Db::refusing): check began() and give up.
class Transaction {
 public:
  explicit Transaction(Db& db);
  ~Transaction();
  bool began() const { return began_; }
  bool commit();

 private:
  Db& db_;
  bool began_ = false;
  bool done_ = false;
};

}  // namespace vgpu::policy::sql
