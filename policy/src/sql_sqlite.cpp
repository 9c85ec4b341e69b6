// The SQLite engine under the SQL layer: one connection to one file.
#include <sqlite3.h>

#include "sql.h"

namespace vgpu::policy::sql {
namespace {

class SqliteCursor final : public Cursor {
 public:
  SqliteCursor(sqlite3* db, std::string_view sql) {
    if (sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr) !=
        SQLITE_OK) {
      stmt_ = nullptr;
    }
  }
  ~SqliteCursor() override { sqlite3_finalize(stmt_); }

  bool ok() const override { return stmt_ != nullptr; }
  void bind(int index, int64_t v) override { sqlite3_bind_int64(stmt_, index, v); }
  void bind(int index, std::string_view v) override {
    sqlite3_bind_text(stmt_, index, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void bind_null(int index) override { sqlite3_bind_null(stmt_, index); }
  int step() override { return sqlite3_step(stmt_); }
  void reset() override {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  int64_t int64(int column) const override { return sqlite3_column_int64(stmt_, column); }
  bool is_null(int column) const override {
    return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
  }
  std::string text(int column) const override {
    const auto* p = sqlite3_column_text(stmt_, column);
    return p ? reinterpret_cast<const char*>(p) : "";
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

static_assert(kRow == SQLITE_ROW && kDone == SQLITE_DONE);

class SqliteConnection final : public Connection {
 public:
  ~SqliteConnection() override {
    if (db_) sqlite3_close_v2(db_);
  }

  bool open(const std::string& path, bool read_only, std::string* why) {
    const int flags = read_only
                          ? SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX
                          : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX;
    if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
      if (why) *why = "cannot open database " + path + ": " + error();
      return false;
    }
    sqlite3_busy_timeout(db_, 5000);
    if (read_only) return true;
    return exec("PRAGMA journal_mode=WAL", why) && exec("PRAGMA synchronous=NORMAL", why) &&
           exec("PRAGMA foreign_keys=ON", why);
  }

  Dialect dialect() const override { return Dialect::kSqlite; }

  bool exec(std::string_view sql, std::string* why) override {
    char* err = nullptr;
    const std::string text(sql);
    if (sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      if (why) *why = err ? err : error();
      sqlite3_free(err);
      return false;
    }
    return true;
  }

  std::unique_ptr<Cursor> prepare(std::string_view sql) override {
    return std::make_unique<SqliteCursor>(db_, sql);
  }

  std::string error() const override { return db_ ? sqlite3_errmsg(db_) : "no database"; }
  bool refused() const override {
    const int code = db_ ? sqlite3_errcode(db_) & 0xff : SQLITE_OK;  // the primary code
    return code == SQLITE_CONSTRAINT || code == SQLITE_MISMATCH || code == SQLITE_RANGE ||
           code == SQLITE_TOOBIG;
  }
  int64_t changes() override { return sqlite3_changes(db_); }
  int64_t last_insert_id() override { return sqlite3_last_insert_rowid(db_); }
  bool begin() override { return exec("BEGIN IMMEDIATE", nullptr); }
  bool commit() override { return exec("COMMIT", nullptr); }
  void rollback() override { exec("ROLLBACK", nullptr); }

  int schema_version() override {
    SqliteCursor s(db_, "PRAGMA user_version");
    return s.step() == SQLITE_ROW ? static_cast<int>(s.int64(0)) : -1;
  }

  bool set_schema_version(int v, std::string* why) override {
    return exec("PRAGMA user_version = " + std::to_string(v), why);
  }

  void set_lock_timeout(int ms) override { sqlite3_busy_timeout(db_, ms); }

 private:
  sqlite3* db_ = nullptr;
};

}  // namespace

std::unique_ptr<Connection> open_sqlite(const std::string& path, bool read_only, std::string* why) {
  auto conn = std::make_unique<SqliteConnection>();
  if (!conn->open(path, read_only, why)) return nullptr;
  return conn;
}

}  // namespace vgpu::policy::sql
