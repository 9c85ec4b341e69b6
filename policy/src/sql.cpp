// Db, Stmt and Transaction over whichever engine's Connection is open.
#include "sql.h"

namespace vgpu::policy::sql {

Db::~Db() = default;

bool Db::open(const std::string& path, std::string* why) {
  conn_ = open_sqlite(path, false, why);
  return conn_ != nullptr;
}

bool Db::open_read_only(const std::string& path, std::string* why) {
  conn_ = open_sqlite(path, true, why);
  return conn_ != nullptr;
}

bool Db::open_postgres(const std::string& conninfo, bool read_only, std::string* why) {
  conn_ = sql::open_postgres(conninfo, read_only, why);
  return conn_ != nullptr;
}

std::string Db::error() const {
  if (refusing()) return "a transaction could not begin; nothing runs until it is given up";
  return conn_ ? conn_->error() : "no database";
}

bool Db::exec(std::string_view sql, std::string* why) {
  if (refusing() || !conn_) {
    if (why) *why = error();
    return false;
  }
  return conn_->exec(sql, why);
}

Stmt::Stmt(const Db& db, std::string_view sql) : db_(db) {
  if (db.conn_) cursor_ = db.conn_->prepare(sql);
}

Stmt& Stmt::bind(int index, int64_t v) {
  if (cursor_) cursor_->bind(index, v);
  return *this;
}

Stmt& Stmt::bind(int index, std::string_view v) {
  if (cursor_) cursor_->bind(index, v);
  return *this;
}

Stmt& Stmt::bind_null(int index) {
  if (cursor_) cursor_->bind_null(index);
  return *this;
}

int Stmt::step() {
  last_ = db_.refusing() || !ok() ? -1 : cursor_->step();
  return last_;
}

void Stmt::reset() {
  last_ = 0;
  if (cursor_) cursor_->reset();
}

Transaction::Transaction(Db& db) : db_(db) {
  began_ = !db_.refusing() && db_.conn_ && db_.conn_->begin();
  if (!began_) ++db_.unbegun_;
}

Transaction::~Transaction() {
  if (!began_) {
    --db_.unbegun_;
  } else if (!done_) {
    db_.conn_->rollback();
  }
}

bool Transaction::commit() {
  done_ = true;
  return began_ && db_.conn_->commit();
}

}  // namespace vgpu::policy::sql
