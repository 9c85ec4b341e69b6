// The usage spool on a SQLite file (usage_spool.h).
#include "vgpu/policy/usage_spool.h"

#include <sys/stat.h>

#include "sql.h"

namespace vgpu::policy {
namespace {

class SqliteSpool final : public UsageSpool {
 public:
  Result open(const std::string& path) {
    std::string why;
    if (!db_.open(path, &why) ||
        !db_.exec("CREATE TABLE IF NOT EXISTS spooled ("
                  "  seq INTEGER NOT NULL, tenant INTEGER NOT NULL, student INTEGER NOT NULL,"
                  "  interval_start INTEGER NOT NULL, host TEXT NOT NULL, gpu INTEGER NOT NULL,"
                  "  gpu_ns INTEGER NOT NULL, kernels INTEGER NOT NULL,"
                  "  bytes_to_device INTEGER NOT NULL, bytes_from_device INTEGER NOT NULL,"
                  "  peak_memory INTEGER NOT NULL);"
                  "CREATE INDEX IF NOT EXISTS spooled_by_seq ON spooled(seq);"
                  // The highest number given, kept when its batch is gone.
                  "CREATE TABLE IF NOT EXISTS spool_seq (last INTEGER NOT NULL);"
                  // Batches the store refused, for an admin to look at.
                  "CREATE TABLE IF NOT EXISTS set_aside AS SELECT * FROM spooled WHERE 0;"
                  "CREATE TABLE IF NOT EXISTS set_aside_why ("
                  "  seq INTEGER PRIMARY KEY, at INTEGER NOT NULL, why TEXT NOT NULL);",
                  &why)) {
      return Result::storage("usage spool " + path + ": " + why);
    }
    // Whose usage it holds is the daemon's business (its -wal and -shm files
    // take the same mode from it).
    ::chmod(path.c_str(), 0600);
    return {};
  }

  Result put(int64_t seq, std::span<const UsageRecord> batch) override {
    sql::Transaction tx(db_);
    if (!tx.began()) return error();
    sql::Stmt s(db_,
                "INSERT INTO spooled(seq, tenant, student, interval_start, host, gpu, gpu_ns, "
                "kernels, bytes_to_device, bytes_from_device, peak_memory) "
                "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
    for (const UsageRecord& r : batch) {
      s.bind(1, seq).bind(2, static_cast<int64_t>(r.tenant)).bind(3, int64_t{r.student});
      s.bind(4, r.interval_start).bind(5, r.host).bind(6, int64_t{r.gpu});
      s.bind(7, static_cast<int64_t>(r.gpu_ns)).bind(8, static_cast<int64_t>(r.kernels));
      s.bind(9, static_cast<int64_t>(r.bytes_to_device));
      s.bind(10, static_cast<int64_t>(r.bytes_from_device));
      s.bind(11, static_cast<int64_t>(r.peak_memory));
      if (s.step() != sql::kDone) return error();
      s.reset();
    }
    if (!db_.exec("DELETE FROM spool_seq; INSERT INTO spool_seq VALUES(" + std::to_string(seq) +
                  ")") ||
        !tx.commit()) {
      return error();
    }
    return {};
  }

  Result oldest(int64_t* seq, std::vector<UsageRecord>* batch) override {
    batch->clear();
    *seq = 0;
    sql::Stmt first(db_, "SELECT min(seq) FROM spooled");
    if (first.step() != sql::kRow) return error();
    if (first.is_null(0)) return {};
    const int64_t n = first.int64(0);
    sql::Stmt s(db_,
                "SELECT tenant, student, interval_start, host, gpu, gpu_ns, kernels, "
                "bytes_to_device, bytes_from_device, peak_memory FROM spooled WHERE seq = ?1");
    s.bind(1, n);
    while (s.step() == sql::kRow) {
      UsageRecord r;
      r.tenant = static_cast<TenantId>(s.int64(0));
      r.student = static_cast<uint32_t>(s.int64(1));
      r.interval_start = s.int64(2);
      r.host = s.text(3);
      r.gpu = static_cast<uint32_t>(s.int64(4));
      r.gpu_ns = static_cast<uint64_t>(s.int64(5));
      r.kernels = static_cast<uint64_t>(s.int64(6));
      r.bytes_to_device = static_cast<uint64_t>(s.int64(7));
      r.bytes_from_device = static_cast<uint64_t>(s.int64(8));
      r.peak_memory = static_cast<uint64_t>(s.int64(9));
      batch->push_back(std::move(r));
    }
    if (!s.finished()) return error();
    *seq = n;
    return {};
  }

  Result remove(int64_t seq) override {
    sql::Stmt s(db_, "DELETE FROM spooled WHERE seq = ?1");
    s.bind(1, seq);
    return s.step() == sql::kDone ? Result() : error();
  }

  Result set_aside(int64_t seq, const std::string& why) override {
    sql::Transaction tx(db_);
    if (!tx.began()) return error();
    sql::Stmt copy(db_, "INSERT INTO set_aside SELECT * FROM spooled WHERE seq = ?1");
    copy.bind(1, seq);
    sql::Stmt note(db_,
                   "INSERT INTO set_aside_why(seq, at, why) VALUES(?1, CAST(strftime('%s', 'now') "
                   "AS INTEGER), ?2) "
                   "ON CONFLICT(seq) DO UPDATE SET why = ?2");
    note.bind(1, seq).bind(2, why);
    sql::Stmt drop(db_, "DELETE FROM spooled WHERE seq = ?1");
    drop.bind(1, seq);
    if (copy.step() != sql::kDone || note.step() != sql::kDone || drop.step() != sql::kDone ||
        !tx.commit()) {
      return error();
    }
    return {};
  }

  Result pending(int64_t* batches, int64_t* max_seq) override {
    sql::Stmt s(db_,
                "SELECT (SELECT count(DISTINCT seq) FROM spooled), "
                "(SELECT coalesce(max(last), 0) FROM spool_seq)");
    if (s.step() != sql::kRow) return error();
    *batches = s.int64(0);
    *max_seq = s.int64(1);
    return {};
  }

 private:
  Result error() const { return Result::storage("usage spool: " + db_.error()); }

  sql::Db db_;
};

}  // namespace

Result open_usage_spool(const std::string& path, std::unique_ptr<UsageSpool>* out) {
  auto spool = std::make_unique<SqliteSpool>();
  if (Result r = spool->open(path); !r.ok()) return r;
  *out = std::move(spool);
  return {};
}

}  // namespace vgpu::policy
