// The SQL layer under the store: a connection, a statement and a
// transaction, over either engine (SQLite embedded, or a PostgreSQL server
// that several hosts share). The store's statements are written once, in SQL
// both engines take, with numbered parameters (?1, ?2, ...); the PostgreSQL
// driver renumbers them. Where the dialects differ (the schema), the caller
// asks dialect().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace vgpu::policy::sql {

enum class Dialect { kSqlite, kPostgres };

// What Stmt::step answers (the values are SQLite's, so its driver passes them through).
constexpr int kRow = 100;
constexpr int kDone = 101;

// One engine's prepared statement.
class Cursor {
 public:
  virtual ~Cursor() = default;
  virtual bool ok() const = 0;
  virtual void bind(int index, int64_t v) = 0;
  virtual void bind(int index, std::string_view v) = 0;
  virtual void bind_null(int index) = 0;
  // kRow, kDone, or another value for an error.
  virtual int step() = 0;
  // Ready to run again, with no parameters bound.
  virtual void reset() = 0;
  virtual int64_t int64(int column) const = 0;
  virtual bool is_null(int column) const = 0;
  virtual std::string text(int column) const = 0;
};

// One engine's connection. Not thread-safe: the store holds its lock.
class Connection {
 public:
  virtual ~Connection() = default;
  virtual Dialect dialect() const = 0;
  virtual bool exec(std::string_view sql, std::string* why) = 0;
  virtual std::unique_ptr<Cursor> prepare(std::string_view sql) = 0;
  virtual std::string error() const = 0;
  // Whether the last error was the data refused (a constraint, a value out of
  // range): the same statement would fail again, unlike an unreachable,
  // locked or failing database.
  virtual bool refused() const = 0;
  // Rows the last statement inserted, changed or deleted.
  virtual int64_t changes() = 0;
  // The id the last insert into a table with an id column gave its row.
  virtual int64_t last_insert_id() = 0;
  // A write transaction: one writer at a time, as SQLite's BEGIN IMMEDIATE
  // (on PostgreSQL, an advisory lock every vgpu host takes). False if the
  // lock was not had within the lock timeout, or the engine is unreachable.
  virtual bool begin() = 0;
  virtual bool commit() = 0;
  virtual void rollback() = 0;
  // The schema's version (0: a database vgpu never wrote), -1 if unreadable.
  virtual int schema_version() = 0;
  virtual bool set_schema_version(int v, std::string* why) = 0;
  // How long a transaction waits for another writer.
  virtual void set_lock_timeout(int ms) = 0;
};

class Db {
 public:
  Db() = default;
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  // Opens or creates the SQLite file; WAL mode, foreign keys on, a busy timeout.
  bool open(const std::string& path, std::string* why);
  // Opens an existing SQLite file for reading only (no journal-mode change, no writes).
  bool open_read_only(const std::string& path, std::string* why);
  // Connects to a PostgreSQL server (a libpq connection string or
  // postgresql:// URL). `read_only`: every transaction is read-only.
  bool open_postgres(const std::string& conninfo, bool read_only, std::string* why);

  Dialect dialect() const { return conn_->dialect(); }
  bool exec(std::string_view sql, std::string* why = nullptr);
  std::string error() const;
  bool refused() const { return conn_ && !refusing() && conn_->refused(); }
  int64_t changes() { return conn_->changes(); }
  int64_t last_insert_id() { return conn_->last_insert_id(); }
  int schema_version() { return conn_->schema_version(); }
  bool set_schema_version(int v, std::string* why) { return conn_->set_schema_version(v, why); }
  void set_lock_timeout(int ms) { conn_->set_lock_timeout(ms); }
  // While a Transaction that failed to begin is alive, nothing runs on this
  // connection (statements fail, exec fails): run outside the transaction,
  // each statement would commit on its own, and a change meant to be all or
  // nothing could land in part.
  bool refusing() const { return unbegun_ > 0; }

 private:
  friend class Stmt;
  friend class Transaction;
  std::unique_ptr<Connection> conn_;
  int unbegun_ = 0;  // Transactions alive whose BEGIN failed
};

class Stmt {
 public:
  Stmt(const Db& db, std::string_view sql);
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  bool ok() const { return cursor_ && cursor_->ok(); }
  Stmt& bind(int index, int64_t v);
  Stmt& bind(int index, std::string_view v);
  Stmt& bind_null(int index);
  // kRow, kDone or another value for an error.
  int step();
  // Whether the last step reached the end (kDone), rather than an error
  // that ended a loop over rows early.
  bool finished() const { return last_ == kDone; }
  void reset();
  int64_t int64(int column) const { return cursor_->int64(column); }
  bool is_null(int column) const { return cursor_->is_null(column); }
  std::string text(int column) const { return cursor_->text(column); }

 private:
  const Db& db_;
  std::unique_ptr<Cursor> cursor_;
  int last_ = 0;
};

// BEGIN ... COMMIT, rolled back if not committed. If BEGIN fails (another
// writer held the database past the lock timeout, the disk is read-only, the
// server is unreachable), began() is false and the connection refuses every
// statement until this is destroyed (Db::refusing): check began() and give up.
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

// The two engines' connections (sql_sqlite.cpp, sql_postgres.cpp).
std::unique_ptr<Connection> open_sqlite(const std::string& path, bool read_only, std::string* why);
std::unique_ptr<Connection> open_postgres(const std::string& conninfo, bool read_only,
                                          std::string* why);

}  // namespace vgpu::policy::sql
