#include "sqlite.h"

namespace vgpu::policy::sql {

Db::~Db() {
  if (db_) sqlite3_close_v2(db_);
}

bool Db::open(const std::string& path, std::string* why) {
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX;
  if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    if (why) *why = "cannot open database " + path + ": " + error();
    return false;
  }
  sqlite3_busy_timeout(db_, 5000);
  return exec("PRAGMA journal_mode=WAL", why) && exec("PRAGMA synchronous=NORMAL", why) &&
         exec("PRAGMA foreign_keys=ON", why);
}

bool Db::open_read_only(const std::string& path, std::string* why) {
  const int flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX;
  if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    if (why) *why = "cannot open database " + path + ": " + error();
    return false;
  }
  sqlite3_busy_timeout(db_, 5000);
  return true;
}

std::string Db::error() const {
  if (refusing()) return "a transaction could not begin; nothing runs until it is given up";
  return db_ ? sqlite3_errmsg(db_) : "no database";
}

bool Db::exec(std::string_view sql, std::string* why) {
  if (refusing()) {
    if (why) *why = error();
    return false;
  }
  char* err = nullptr;
  const std::string text(sql);
  if (sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    if (why) *why = err ? err : error();
    sqlite3_free(err);
    return false;
  }
  return true;
}

Stmt::Stmt(const Db& db, std::string_view sql) : db_(db) {
  if (sqlite3_prepare_v2(db.raw(), sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr) !=
      SQLITE_OK) {
    stmt_ = nullptr;
  }
}

Stmt::~Stmt() { sqlite3_finalize(stmt_); }

Stmt& Stmt::bind(int index, int64_t v) {
  sqlite3_bind_int64(stmt_, index, v);
  return *this;
}

Stmt& Stmt::bind(int index, std::string_view v) {
  sqlite3_bind_text(stmt_, index, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}

Stmt& Stmt::bind_null(int index) {
  sqlite3_bind_null(stmt_, index);
  return *this;
}

int Stmt::step() {
  if (db_.refusing()) return SQLITE_ABORT;
  return stmt_ ? sqlite3_step(stmt_) : SQLITE_MISUSE;
}

void Stmt::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

std::string Stmt::text(int column) const {
  const auto* p = sqlite3_column_text(stmt_, column);
  return p ? reinterpret_cast<const char*>(p) : "";
}

Transaction::Transaction(Db& db) : db_(db) {
  began_ = db_.exec("BEGIN IMMEDIATE");
  if (!began_) ++db_.unbegun_;
}

Transaction::~Transaction() {
  if (!began_) {
    --db_.unbegun_;
  } else if (!done_) {
    db_.exec("ROLLBACK");
  }
}

bool Transaction::commit() {
  done_ = true;
  return began_ && db_.exec("COMMIT");
}

}  // namespace vgpu::policy::sql
