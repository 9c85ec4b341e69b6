// The PostgreSQL engine under the SQL layer: one libpq connection to a
// server that several vgpu hosts share. Statements are sent with their
// parameters (no text is ever spliced into SQL) and answered in text form.
#include <libpq-fe.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <vector>

#include "sql.h"

namespace vgpu::policy::sql {
namespace {

// PostgreSQL's type oids (stable since its first releases): a parameter
// bound as an integer is sent as bigint; text is left for the server to
// type from where it is used.
constexpr Oid kInt8Oid = 20;

// Every vgpu host takes this advisory lock for a write transaction, so that
// changes are serialised as they are on one SQLite file ('vgpu' in ASCII).
constexpr const char* kWriteLock = "SELECT pg_advisory_xact_lock(1986490485)";

// ?1, ?2, ... (the store's placeholders) as $1, $2, ...; outside quotes only.
std::string renumber(std::string_view sql, int* params) {
  std::string out;
  out.reserve(sql.size());
  bool quoted = false;
  *params = 0;
  for (size_t i = 0; i < sql.size(); ++i) {
    const char c = sql[i];
    if (c == '\'') quoted = !quoted;
    if (c != '?' || quoted) {
      out += c;
      continue;
    }
    out += '$';
    int n = 0;
    while (i + 1 < sql.size() && sql[i + 1] >= '0' && sql[i + 1] <= '9') {
      n = n * 10 + (sql[++i] - '0');
      out += sql[i];
    }
    if (n > *params) *params = n;
  }
  return out;
}

std::string trimmed(const char* message) {
  std::string s = message ? message : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

class PgConnection;

class PgCursor final : public Cursor {
 public:
  PgCursor(PgConnection& conn, std::string_view sql);
  ~PgCursor() override { PQclear(result_); }

  bool ok() const override { return true; }
  void bind(int index, int64_t v) override { set(index, std::to_string(v), kInt8Oid); }
  void bind(int index, std::string_view v) override { set(index, std::string(v), 0); }
  void bind_null(int index) override { set(index, std::nullopt, 0); }
  int step() override;
  void reset() override {
    PQclear(result_);
    result_ = nullptr;
    values_.assign(values_.size(), std::nullopt);
    types_.assign(types_.size(), 0);
  }
  int64_t int64(int column) const override {
    const char* v = PQgetvalue(result_, row_, column);
    if (v[0] == 't' && v[1] == '\0') return 1;  // a boolean
    if (v[0] == 'f' && v[1] == '\0') return 0;
    return std::strtoll(v, nullptr, 10);
  }
  bool is_null(int column) const override { return PQgetisnull(result_, row_, column) != 0; }
  std::string text(int column) const override { return PQgetvalue(result_, row_, column); }

 private:
  void set(int index, std::optional<std::string> value, Oid type) {
    if (index < 1 || index > static_cast<int>(values_.size())) return;
    values_[static_cast<size_t>(index - 1)] = std::move(value);
    types_[static_cast<size_t>(index - 1)] = type;
  }

  PgConnection& conn_;
  std::string sql_;
  std::vector<std::optional<std::string>> values_;
  std::vector<Oid> types_;
  PGresult* result_ = nullptr;
  int row_ = 0;
};

class PgConnection final : public Connection {
 public:
  ~PgConnection() override {
    if (conn_) PQfinish(conn_);
  }

  bool open(const std::string& conninfo, bool read_only, std::string* why) {
    read_only_ = read_only;
    // Defaults first: what the connection string says wins over them.
    const char* keys[] = {"connect_timeout", "application_name", "dbname", nullptr};
    const char* values[] = {"5", "vgpu", conninfo.c_str(), nullptr};
    conn_ = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
    if (!conn_ || PQstatus(conn_) != CONNECTION_OK || !configure(why)) {
      if (why && (why->empty() || PQstatus(conn_) != CONNECTION_OK)) {
        *why = "cannot connect to the PostgreSQL database: " + trimmed(PQerrorMessage(conn_));
      }
      return false;
    }
    return true;
  }

  Dialect dialect() const override { return Dialect::kPostgres; }

  bool exec(std::string_view sql, std::string* why) override {
    if (!connected()) {
      if (why) *why = error_;
      return false;
    }
    PGresult* r = PQexec(conn_, std::string(sql).c_str());
    const ExecStatusType st = PQresultStatus(r);
    const bool ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
    if (!ok) failed(r);
    if (!ok && why) *why = error_;
    PQclear(r);
    return ok;
  }

  std::unique_ptr<Cursor> prepare(std::string_view sql) override {
    return std::make_unique<PgCursor>(*this, sql);
  }

  std::string error() const override { return error_; }
  // Class 22 (data exception) or 23 (integrity constraint violation).
  bool refused() const override {
    return sqlstate_.starts_with("22") || sqlstate_.starts_with("23");
  }
  int64_t changes() override { return changes_; }

  int64_t last_insert_id() override {
    PgCursor s(*this, "SELECT lastval()");
    return s.step() == kRow ? s.int64(0) : 0;
  }

  bool begin() override {
    if (!exec("BEGIN", nullptr)) return false;
    in_tx_ = true;
    if (!exec(kWriteLock, nullptr)) {
      rollback();
      return false;
    }
    return true;
  }

  bool commit() override {
    if (!connected()) return false;
    PGresult* r = PQexec(conn_, "COMMIT");
    // A transaction in which a statement failed answers COMMIT with ROLLBACK.
    const bool ok =
        PQresultStatus(r) == PGRES_COMMAND_OK && std::string_view(PQcmdStatus(r)) == "COMMIT";
    if (!ok) failed(r);
    PQclear(r);
    in_tx_ = false;
    return ok;
  }

  void rollback() override {
    if (PQstatus(conn_) == CONNECTION_OK) PQclear(PQexec(conn_, "ROLLBACK"));
    in_tx_ = false;
  }

  int schema_version() override {
    PgCursor exists(*this, "SELECT to_regclass('vgpu_schema') IS NOT NULL");
    if (exists.step() != kRow) return -1;
    if (exists.int64(0) == 0) return 0;
    PgCursor s(*this, "SELECT coalesce(max(version), 0) FROM vgpu_schema");
    return s.step() == kRow ? static_cast<int>(s.int64(0)) : -1;
  }

  bool set_schema_version(int v, std::string* why) override {
    return exec(
        "CREATE TABLE IF NOT EXISTS vgpu_schema (version INTEGER NOT NULL); "
        "DELETE FROM vgpu_schema; INSERT INTO vgpu_schema VALUES (" +
            std::to_string(v) + ")",
        why);
  }

  void set_lock_timeout(int ms) override {
    lock_timeout_ms_ = ms;
    exec("SET lock_timeout = " + std::to_string(ms), nullptr);
  }

  // Runs one statement with its parameters; the cursor owns the result.
  PGresult* run(const std::string& sql, const std::vector<std::optional<std::string>>& values,
                const std::vector<Oid>& types) {
    if (!connected()) return nullptr;
    std::vector<const char*> raw(values.size());
    for (size_t i = 0; i < values.size(); ++i) raw[i] = values[i] ? values[i]->c_str() : nullptr;
    PGresult* r = PQexecParams(conn_, sql.c_str(), static_cast<int>(raw.size()), types.data(),
                               raw.data(), nullptr, nullptr, 0);
    const ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
      failed(r);
      PQclear(r);
      return nullptr;
    }
    const char* n = PQcmdTuples(r);
    changes_ = n && *n ? std::strtoll(n, nullptr, 10) : 0;
    return r;
  }

 private:
  // The session's settings, again after a reconnection.
  bool configure(std::string* why) {
    PQsetNoticeProcessor(
        conn_, [](void*, const char*) {}, nullptr);
    std::string settings = "SET lock_timeout = " + std::to_string(lock_timeout_ms_);
    if (read_only_) settings += "; SET default_transaction_read_only = on";
    return exec(settings, why);
  }

  // Whether statements can run: a lost connection is made again, unless it
  // was lost inside a transaction (what was done in it is gone, and what
  // follows must not run on its own: the transaction fails as a whole).
  // After a failed attempt the next waits kRetryAfter: an unreachable server
  // costs a caller (the thread that serves VMs, at a VM's connection) the
  // connect timeout once, not at every call.
  bool connected() {
    if (PQstatus(conn_) == CONNECTION_OK) return true;
    if (in_tx_) {
      error_ = "the connection to the PostgreSQL server was lost during a transaction";
      sqlstate_.clear();
      return false;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now < retry_at_) return false;  // error_ still says why
    PQreset(conn_);
    if (PQstatus(conn_) != CONNECTION_OK) {
      error_ = "cannot reach the PostgreSQL server: " + trimmed(PQerrorMessage(conn_));
      sqlstate_.clear();
      retry_at_ = std::chrono::steady_clock::now() + kRetryAfter;
      return false;
    }
    return configure(nullptr);
  }

  void failed(PGresult* r) {
    error_ = trimmed(r ? PQresultErrorMessage(r) : PQerrorMessage(conn_));
    if (error_.empty()) error_ = trimmed(PQerrorMessage(conn_));
    const char* state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
    sqlstate_ = state ? state : "";
  }

  static constexpr std::chrono::seconds kRetryAfter{2};

  PGconn* conn_ = nullptr;
  std::chrono::steady_clock::time_point retry_at_{};
  bool read_only_ = false;
  bool in_tx_ = false;
  int lock_timeout_ms_ = 5000;
  int64_t changes_ = 0;
  std::string error_;
  std::string sqlstate_;  // of the last failed statement ("": none, or the connection)
};

PgCursor::PgCursor(PgConnection& conn, std::string_view sql) : conn_(conn) {
  int params = 0;
  sql_ = renumber(sql, &params);
  values_.resize(static_cast<size_t>(params));
  types_.resize(static_cast<size_t>(params));
}

int PgCursor::step() {
  if (!result_) {
    result_ = conn_.run(sql_, values_, types_);
    if (!result_) return -1;
    row_ = 0;
  } else {
    ++row_;
  }
  return row_ < PQntuples(result_) ? kRow : kDone;
}

}  // namespace

std::unique_ptr<Connection> open_postgres(const std::string& conninfo, bool read_only,
                                          std::string* why) {
  auto conn = std::make_unique<PgConnection>();
  if (!conn->open(conninfo, read_only, why)) return nullptr;
  return conn;
}

}  // namespace vgpu::policy::sql
