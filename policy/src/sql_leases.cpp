// The SQL store: budget leases (lease.h), one transaction each.
#include <algorithm>
#include <map>

#include "sql_store.h"

namespace vgpu::policy {

namespace {

// What the store knows of one host's part of a budget window.
struct HostPart {
  int64_t ledger = 0;    // its usage rows
  int64_t limit = 0;     // its lease, if live
  int64_t reported = 0;  // its spending when it last leased
  bool live = false;
};

}  // namespace

Result SqlStore::lease_budget(const LeaseRequest& req, const LeaseRules& rules, LeaseGrant* out) {
  std::lock_guard lock(mu_);
  if (Result r = writable(); !r.ok()) return r;
  if (!valid_host_name(req.host)) return Result::invalid_argument(bad_name("host", req.host));
  if (req.budget_ns < 0 || req.used_ns < 0 || req.window_end <= req.window_start) {
    return Result::invalid_argument("a lease request needs a budget window and no negative time");
  }
  // The write lock first: every host's lease of this budget is decided in turn.
  sql::Transaction tx(db_);
  if (!tx.began()) return not_begun();
  const int64_t student = req.student, vm = req.student ? 0 : req.vm;

  std::map<std::string, HostPart> parts;
  sql::Stmt ledger(db_,
                   "SELECT host, coalesce(sum(gpu_ns), 0) FROM usage WHERE student_id = ?1 "
                   "AND (?1 <> 0 OR tenant_id = ?2) AND interval_start >= ?3 "
                   "AND interval_start < ?4 GROUP BY host");
  ledger.bind(1, student).bind(2, vm).bind(3, req.window_start).bind(4, req.window_end);
  while (ledger.step() == sql::kRow) parts[ledger.text(0)].ledger = ledger.int64(1);
  if (!ledger.finished()) return db_error();

  sql::Stmt leases(db_,
                   "SELECT host, limit_ns, used_ns, expires_at FROM budget_leases "
                   "WHERE student_id = ?1 AND tenant_id = ?2 AND window_start = ?3");
  leases.bind(1, student).bind(2, vm).bind(3, req.window_start);
  while (leases.step() == sql::kRow) {
    HostPart& p = parts[leases.text(0)];
    p.limit = leases.int64(1);
    p.reported = leases.int64(2);
    p.live = leases.int64(3) > req.now;
  }
  if (!leases.finished()) return db_error();

  sql::Stmt live_hosts(db_, "SELECT count(*) FROM hosts WHERE last_seen >= ?1");
  live_hosts.bind(1, req.now - rules.live_host_s);
  if (live_hosts.step() != sql::kRow) return db_error();
  const int64_t hosts = std::max<int64_t>(1, live_hosts.int64(0));

  // Another host counts for what it spent, as the ledger or its last lease
  // says, or, while its lease is live, for the whole lease.
  // This host's own, as far as anyone knows (after a restart the ledger or
  // its last lease may know more than it does).
  const HostPart mine = parts[req.host];
  const int64_t used = std::max({req.used_ns, mine.ledger, mine.reported});
  int64_t elsewhere = 0, spent = used;
  for (const auto& [host, p] : parts) {
    if (host == req.host) continue;
    const int64_t known = std::max(p.ledger, p.reported);
    spent += known;
    elsewhere += p.live ? std::max(known, p.limit) : known;
  }
  const int64_t room = std::max<int64_t>(0, req.budget_ns - elsewhere - used);
  const int64_t limit =
      req.give_back ? used : used + std::min(room, lease_size(rules, req.budget_ns, hosts));

  sql::Stmt put(db_,
                "INSERT INTO budget_leases(student_id, tenant_id, window_start, host, limit_ns, "
                "used_ns, expires_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7) "
                "ON CONFLICT(student_id, tenant_id, window_start, host) DO UPDATE SET "
                "limit_ns = ?5, used_ns = ?6, expires_at = ?7");
  put.bind(1, student).bind(2, vm).bind(3, req.window_start).bind(4, req.host);
  put.bind(5, limit).bind(6, used).bind(7, req.now + rules.ttl_s);
  if (put.step() != sql::kDone) return db_error();
  // Leases of windows long over are of no use to anyone.
  sql::Stmt old(db_, "DELETE FROM budget_leases WHERE expires_at < ?1");
  old.bind(1, req.now - 7 * 86400);
  if (old.step() != sql::kDone || !tx.commit()) return db_error();

  out->limit_ns = limit;
  out->used_ns = used;
  out->spent_ns = spent;
  out->expires_at = req.now + rules.ttl_s;
  out->exhausted = spent >= req.budget_ns;
  return {};
}

}  // namespace vgpu::policy
