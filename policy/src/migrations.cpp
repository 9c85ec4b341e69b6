#include "migrations.h"

#include <array>
#include <string_view>

namespace vgpu::policy {
namespace {

constexpr std::array<std::string_view, 8> kMigrations = {
    // 1: VMs (tenants) and the usage ledger.
    R"sql(
      CREATE TABLE vms (
        tenant_id   INTEGER PRIMARY KEY,
        name        TEXT NOT NULL UNIQUE,
        first_seen  INTEGER NOT NULL,
        last_seen   INTEGER NOT NULL
      );
      CREATE TABLE usage (
        tenant_id         INTEGER NOT NULL REFERENCES vms(tenant_id),
        interval_start    INTEGER NOT NULL,
        gpu_ns            INTEGER NOT NULL DEFAULT 0,
        kernels           INTEGER NOT NULL DEFAULT 0,
        bytes_to_device   INTEGER NOT NULL DEFAULT 0,
        bytes_from_device INTEGER NOT NULL DEFAULT 0,
        peak_memory       INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (tenant_id, interval_start)
      );
    )sql",

    // 2: courses, students and the VMs bound to them, quotas, the people who
    // may change them, settings, the audit log; the ledger records which
    // student each VM's usage was charged to. Removed courses and students
    // are kept (removed_at) so old usage stays attributable.
    R"sql(
      CREATE TABLE users (
        id          INTEGER PRIMARY KEY,
        name        TEXT NOT NULL UNIQUE,
        uid         INTEGER NOT NULL UNIQUE,
        role        TEXT NOT NULL CHECK (role IN ('admin', 'teacher')),
        created_at  INTEGER NOT NULL
      );
      CREATE TABLE courses (
        id          INTEGER PRIMARY KEY,
        name        TEXT NOT NULL,
        teacher_id  INTEGER REFERENCES users(id),
        created_at  INTEGER NOT NULL,
        removed_at  INTEGER
      );
      CREATE UNIQUE INDEX courses_live_name ON courses(name) WHERE removed_at IS NULL;
      CREATE TABLE students (
        id          INTEGER PRIMARY KEY,
        name        TEXT NOT NULL,
        course_id   INTEGER NOT NULL REFERENCES courses(id),
        created_at  INTEGER NOT NULL,
        removed_at  INTEGER
      );
      CREATE UNIQUE INDEX students_live_name ON students(name) WHERE removed_at IS NULL;
      CREATE INDEX students_by_course ON students(course_id);
      ALTER TABLE vms ADD COLUMN student_id INTEGER REFERENCES students(id);

      -- One row per level that sets something; NULL columns inherit.
      -- gpu_limited: NULL unset, 0 unlimited, 1 gpu_ns per period.
      CREATE TABLE quotas (
        scope        TEXT NOT NULL CHECK (scope IN ('default', 'course', 'student')),
        scope_id     INTEGER NOT NULL,
        gpu_limited  INTEGER,
        gpu_ns       INTEGER,
        period       TEXT CHECK (period IN ('day', 'week', 'range')),
        range_start  INTEGER,
        range_end    INTEGER,
        memory       INTEGER CHECK (memory >= 0),
        weight       INTEGER CHECK (weight >= 1),
        on_exhaust   TEXT CHECK (on_exhaust IN ('reject', 'wait', 'best-effort')),
        PRIMARY KEY (scope, scope_id)
      );
      CREATE TABLE settings (
        key    TEXT PRIMARY KEY,
        value  TEXT NOT NULL
      );
      CREATE TABLE audit (
        id         INTEGER PRIMARY KEY,
        at         INTEGER NOT NULL,
        uid        INTEGER NOT NULL,
        actor      TEXT NOT NULL,
        action     TEXT NOT NULL,
        object     TEXT NOT NULL,
        course_id  INTEGER,
        old_value  TEXT,
        new_value  TEXT
      );
      CREATE INDEX audit_by_time ON audit(at);

      -- The ledger gains the student the usage was charged to (0: none).
      CREATE TABLE usage_v2 (
        tenant_id         INTEGER NOT NULL REFERENCES vms(tenant_id),
        student_id        INTEGER NOT NULL DEFAULT 0,
        interval_start    INTEGER NOT NULL,
        gpu_ns            INTEGER NOT NULL DEFAULT 0,
        kernels           INTEGER NOT NULL DEFAULT 0,
        bytes_to_device   INTEGER NOT NULL DEFAULT 0,
        bytes_from_device INTEGER NOT NULL DEFAULT 0,
        peak_memory       INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (tenant_id, student_id, interval_start)
      );
      INSERT INTO usage_v2(tenant_id, student_id, interval_start, gpu_ns, kernels,
                           bytes_to_device, bytes_from_device, peak_memory)
        SELECT tenant_id, 0, interval_start, gpu_ns, kernels, bytes_to_device,
               bytes_from_device, peak_memory FROM usage;
      DROP TABLE usage;
      ALTER TABLE usage_v2 RENAME TO usage;
      CREATE INDEX usage_by_student ON usage(student_id, interval_start);
      CREATE INDEX usage_by_time ON usage(interval_start);
    )sql",

    // 3: libvirt domains. A VM attached with `vgpuctl vm attach` is a libvirt
    // domain, known by its UUID (names can be reused); each run of it is a
    // session, ended by the domain's stop, crash or destruction.
    R"sql(
      ALTER TABLE vms ADD COLUMN domain_uuid TEXT;
      ALTER TABLE vms ADD COLUMN attached_at INTEGER;
      CREATE UNIQUE INDEX vms_by_domain ON vms(domain_uuid) WHERE domain_uuid IS NOT NULL;
      CREATE TABLE vm_sessions (
        id           INTEGER PRIMARY KEY,
        tenant_id    INTEGER NOT NULL REFERENCES vms(tenant_id),
        domain_uuid  TEXT NOT NULL,
        student_id   INTEGER NOT NULL DEFAULT 0,
        started_at   INTEGER NOT NULL,
        ended_at     INTEGER,
        end_reason   TEXT,
        gpu_ns       INTEGER NOT NULL DEFAULT 0
      );
      CREATE INDEX vm_sessions_by_vm ON vm_sessions(tenant_id, started_at);
      CREATE INDEX vm_sessions_open ON vm_sessions(ended_at) WHERE ended_at IS NULL;
    )sql",

    // 4: a student's login on this host: the uid whose processes may connect
    // as the student's simulated VMs (vgpu-run --vm NAME).
    R"sql(
      ALTER TABLE students ADD COLUMN uid INTEGER CHECK (uid >= 0);
      CREATE INDEX students_by_uid ON students(uid) WHERE uid IS NOT NULL;
    )sql",

    // 5: the libvirt domains an admin made available to a course: the ones
    // its teachers may attach (vgpud plugs its device into them as root).
    R"sql(
      CREATE TABLE course_domains (
        course_id    INTEGER NOT NULL REFERENCES courses(id),
        domain_uuid  TEXT NOT NULL,
        PRIMARY KEY (course_id, domain_uuid)
      );
    )sql",

    // 6: a course's time zone (an IANA name): its students' quota periods
    // renew at its midnights, and usage reports count its days. Courses
    // made before it are in UTC, as they always were.
    R"sql(
      ALTER TABLE courses ADD COLUMN time_zone TEXT NOT NULL DEFAULT 'UTC';
    )sql",

    // 7: budgets per month (2h/month). SQLite cannot change a CHECK
    // constraint: the table is made again with 'month' allowed.
    R"sql(
      CREATE TABLE quotas_v7 (
        scope        TEXT NOT NULL CHECK (scope IN ('default', 'course', 'student')),
        scope_id     INTEGER NOT NULL,
        gpu_limited  INTEGER,
        gpu_ns       INTEGER,
        period       TEXT CHECK (period IN ('day', 'week', 'month', 'range')),
        range_start  INTEGER,
        range_end    INTEGER,
        memory       INTEGER CHECK (memory >= 0),
        weight       INTEGER CHECK (weight >= 1),
        on_exhaust   TEXT CHECK (on_exhaust IN ('reject', 'wait', 'best-effort')),
        PRIMARY KEY (scope, scope_id)
      );
      INSERT INTO quotas_v7 (scope, scope_id, gpu_limited, gpu_ns, period, range_start,
                             range_end, memory, weight, on_exhaust)
        SELECT scope, scope_id, gpu_limited, gpu_ns, period, range_start, range_end, memory,
               weight, on_exhaust FROM quotas;
      DROP TABLE quotas;
      ALTER TABLE quotas_v7 RENAME TO quotas;
    )sql",
    // 8: which GPU of a host a course's or student's VMs go to (spread,
    // pack); NULL: inherited, or the host's.
    R"sql(
      ALTER TABLE quotas ADD COLUMN placement TEXT CHECK (placement IN ('spread', 'pack'));
    )sql",
};

int user_version(sql::Db& db) {
  sql::Stmt s(db, "PRAGMA user_version");
  return s.step() == SQLITE_ROW ? static_cast<int>(s.int64(0)) : -1;
}

}  // namespace

int latest_schema_version() { return static_cast<int>(kMigrations.size()); }

bool migrate(sql::Db& db, std::string* why, int target) {
  if (target < 0) target = latest_schema_version();
  const int current = user_version(db);
  if (current < 0) {
    *why = "cannot read the schema version: " + db.error();
    return false;
  }
  if (current > latest_schema_version()) {
    *why = "the database has schema version " + std::to_string(current) +
           ", newer than this vgpu (" + std::to_string(latest_schema_version()) + ")";
    return false;
  }
  for (int v = current; v < target; ++v) {
    sql::Transaction tx(db);
    if (!tx.began() || !db.exec(kMigrations[static_cast<size_t>(v)], why) ||
        !db.exec("PRAGMA user_version = " + std::to_string(v + 1), why) || !tx.commit()) {
      *why = "migration to schema version " + std::to_string(v + 1) + " failed: " + *why;
      return false;
    }
  }
  return true;
}

}  // namespace vgpu::policy
