// The PostgreSQL server the tests share (scripts/pg-test-cluster.sh starts
// it as a ctest fixture and names it in $VGPU_TEST_POSTGRES), and a fresh
// database on it for each test, dropped afterwards. Header-only; link libpq.
#pragma once

#include <libpq-fe.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <string>

namespace vgpu::test {

// The server's connection keywords ("host=/tmp/... user=vgpu"), or empty
// when the tests run on SQLite only.
inline std::string postgres_server() {
  const char* file = std::getenv("VGPU_TEST_POSTGRES");
  if (!file || !*file) return "";
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

// Runs one statement on the server's maintenance database; the error or "".
inline std::string postgres_admin(const std::string& server, const std::string& sql) {
  PGconn* c = PQconnectdb((server + " dbname=postgres").c_str());
  std::string why;
  if (PQstatus(c) != CONNECTION_OK) {
    why = PQerrorMessage(c);
  } else {
    PGresult* r = PQexec(c, sql.c_str());
    const ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) why = PQresultErrorMessage(r);
    PQclear(r);
  }
  PQfinish(c);
  return why;
}

// A database of its own on the server; dropped (its connections ended) when done.
class PostgresTestDb {
 public:
  explicit PostgresTestDb(std::string server) : server_(std::move(server)) {
    static std::atomic<int> counter{0};
    name_ = "vgpu_test_" + std::to_string(getpid()) + "_" + std::to_string(++counter);
    error_ = postgres_admin(server_, "CREATE DATABASE " + name_);
  }
  ~PostgresTestDb() {
    postgres_admin(server_, "DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
  }
  PostgresTestDb(const PostgresTestDb&) = delete;
  PostgresTestDb& operator=(const PostgresTestDb&) = delete;

  // Empty if the database was made.
  const std::string& error() const { return error_; }
  // Its libpq connection string.
  std::string conninfo() const { return server_ + " dbname=" + name_; }
  // The same as a postgresql:// URL (what vgpud --db and vgpuctl --db take).
  std::string url() const {
    std::string host, user;
    for (size_t at = 0; at < server_.size();) {
      size_t end = server_.find(' ', at);
      if (end == std::string::npos) end = server_.size();
      const std::string kv = server_.substr(at, end - at);
      if (kv.rfind("host=", 0) == 0) host = kv.substr(5);
      if (kv.rfind("user=", 0) == 0) user = kv.substr(5);
      at = end + 1;
    }
    return "postgresql://" + user + "@/" + name_ + "?host=" + host;
  }
  const std::string& name() const { return name_; }

 private:
  std::string server_;
  std::string name_;
  std::string error_;
};

}  // namespace vgpu::test
