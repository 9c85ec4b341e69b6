#include "migrations.h"

#include <array>
#include <string_view>

namespace vgpu::policy {
namespace {

// SQLite's migrations, from the first schema on.
constexpr std::array<std::string_view, 10> kSqliteMigrations = {
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
    // 9: several hosts share a store. The ledger says which host and GPU
    // measured each row (old rows: none, GPU 0); each host reports itself.
    R"sql(
      CREATE TABLE usage_v9 (
        tenant_id         INTEGER NOT NULL REFERENCES vms(tenant_id),
        student_id        INTEGER NOT NULL DEFAULT 0,
        interval_start    INTEGER NOT NULL,
        host              TEXT NOT NULL DEFAULT '',
        gpu               INTEGER NOT NULL DEFAULT 0,
        gpu_ns            INTEGER NOT NULL DEFAULT 0,
        kernels           INTEGER NOT NULL DEFAULT 0,
        bytes_to_device   INTEGER NOT NULL DEFAULT 0,
        bytes_from_device INTEGER NOT NULL DEFAULT 0,
        peak_memory       INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (tenant_id, student_id, interval_start, host, gpu)
      );
      INSERT INTO usage_v9(tenant_id, student_id, interval_start, gpu_ns, kernels,
                           bytes_to_device, bytes_from_device, peak_memory)
        SELECT tenant_id, student_id, interval_start, gpu_ns, kernels, bytes_to_device,
               bytes_from_device, peak_memory FROM usage;
      DROP TABLE usage;
      ALTER TABLE usage_v9 RENAME TO usage;
      CREATE INDEX usage_by_student ON usage(student_id, interval_start);
      CREATE INDEX usage_by_time ON usage(interval_start);
      CREATE TABLE hosts (
        name        TEXT PRIMARY KEY,
        started_at  INTEGER NOT NULL,
        last_seen   INTEGER NOT NULL,
        backend     TEXT NOT NULL,
        gpus        TEXT NOT NULL
      );
      -- The last usage batch of each host applied to the ledger: a batch
      -- replayed after a commit whose answer was lost is not counted twice.
      CREATE TABLE host_batches (
        host      TEXT PRIMARY KEY,
        last_seq  INTEGER NOT NULL
      );
    )sql",
    // 10: budget leases (lease.h): what each host may spend of a budget
    // window, and what it had spent when it last took or renewed its lease;
    // and a VM's own placement policy (NULL: its student's, course's, host's).
    R"sql(
      CREATE TABLE budget_leases (
        student_id    INTEGER NOT NULL,
        tenant_id     INTEGER NOT NULL,
        window_start  INTEGER NOT NULL,
        host          TEXT NOT NULL,
        limit_ns      INTEGER NOT NULL,
        used_ns       INTEGER NOT NULL,
        expires_at    INTEGER NOT NULL,
        PRIMARY KEY (student_id, tenant_id, window_start, host)
      );
      CREATE INDEX budget_leases_by_expiry ON budget_leases(expires_at);
      -- A VM's own placement policy, over its student's and course's.
      ALTER TABLE vms ADD COLUMN placement TEXT CHECK (placement IN ('spread', 'pack'));
    )sql",
};

// PostgreSQL's: support for it began at schema version 8, so a new database
// is made at 8 in one step (1 to 7 are part of it). Versions after 8 are
// added to both lists, each in its engine's SQL. Text sorts by code point
// (COLLATE "C"), as in SQLite, whatever the server's locale.
constexpr std::array<std::string_view, 10> kPostgresMigrations = {
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    R"sql(
      CREATE TABLE users (
        id          BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        name        TEXT COLLATE "C" NOT NULL UNIQUE,
        uid         BIGINT NOT NULL UNIQUE,
        role        TEXT NOT NULL CHECK (role IN ('admin', 'teacher')),
        created_at  BIGINT NOT NULL
      );
      CREATE TABLE courses (
        id          BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        name        TEXT COLLATE "C" NOT NULL,
        teacher_id  BIGINT REFERENCES users(id),
        created_at  BIGINT NOT NULL,
        removed_at  BIGINT,
        time_zone   TEXT NOT NULL DEFAULT 'UTC'
      );
      CREATE UNIQUE INDEX courses_live_name ON courses(name) WHERE removed_at IS NULL;
      CREATE TABLE students (
        id          BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        name        TEXT COLLATE "C" NOT NULL,
        course_id   BIGINT NOT NULL REFERENCES courses(id),
        created_at  BIGINT NOT NULL,
        removed_at  BIGINT,
        uid         BIGINT CHECK (uid >= 0)
      );
      CREATE UNIQUE INDEX students_live_name ON students(name) WHERE removed_at IS NULL;
      CREATE INDEX students_by_course ON students(course_id);
      CREATE INDEX students_by_uid ON students(uid) WHERE uid IS NOT NULL;
      CREATE TABLE vms (
        tenant_id    BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        name         TEXT COLLATE "C" NOT NULL UNIQUE,
        first_seen   BIGINT NOT NULL,
        last_seen    BIGINT NOT NULL,
        student_id   BIGINT REFERENCES students(id),
        domain_uuid  TEXT COLLATE "C",
        attached_at  BIGINT
      );
      CREATE UNIQUE INDEX vms_by_domain ON vms(domain_uuid) WHERE domain_uuid IS NOT NULL;
      CREATE TABLE quotas (
        scope        TEXT NOT NULL CHECK (scope IN ('default', 'course', 'student')),
        scope_id     BIGINT NOT NULL,
        gpu_limited  BIGINT,
        gpu_ns       BIGINT,
        period       TEXT CHECK (period IN ('day', 'week', 'month', 'range')),
        range_start  BIGINT,
        range_end    BIGINT,
        memory       BIGINT CHECK (memory >= 0),
        weight       BIGINT CHECK (weight >= 1),
        on_exhaust   TEXT CHECK (on_exhaust IN ('reject', 'wait', 'best-effort')),
        placement    TEXT CHECK (placement IN ('spread', 'pack')),
        PRIMARY KEY (scope, scope_id)
      );
      CREATE TABLE settings (
        key    TEXT PRIMARY KEY,
        value  TEXT NOT NULL
      );
      CREATE TABLE audit (
        id         BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        at         BIGINT NOT NULL,
        uid        BIGINT NOT NULL,
        actor      TEXT COLLATE "C" NOT NULL,
        action     TEXT COLLATE "C" NOT NULL,
        object     TEXT COLLATE "C" NOT NULL,
        course_id  BIGINT,
        old_value  TEXT,
        new_value  TEXT
      );
      CREATE INDEX audit_by_time ON audit(at);
      CREATE TABLE usage (
        tenant_id         BIGINT NOT NULL REFERENCES vms(tenant_id),
        student_id        BIGINT NOT NULL DEFAULT 0,
        interval_start    BIGINT NOT NULL,
        gpu_ns            BIGINT NOT NULL DEFAULT 0,
        kernels           BIGINT NOT NULL DEFAULT 0,
        bytes_to_device   BIGINT NOT NULL DEFAULT 0,
        bytes_from_device BIGINT NOT NULL DEFAULT 0,
        peak_memory       BIGINT NOT NULL DEFAULT 0,
        PRIMARY KEY (tenant_id, student_id, interval_start)
      );
      CREATE INDEX usage_by_student ON usage(student_id, interval_start);
      CREATE INDEX usage_by_time ON usage(interval_start);
      CREATE TABLE vm_sessions (
        id           BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        tenant_id    BIGINT NOT NULL REFERENCES vms(tenant_id),
        domain_uuid  TEXT COLLATE "C" NOT NULL,
        student_id   BIGINT NOT NULL DEFAULT 0,
        started_at   BIGINT NOT NULL,
        ended_at     BIGINT,
        end_reason   TEXT,
        gpu_ns       BIGINT NOT NULL DEFAULT 0
      );
      CREATE INDEX vm_sessions_by_vm ON vm_sessions(tenant_id, started_at);
      CREATE INDEX vm_sessions_open ON vm_sessions(ended_at) WHERE ended_at IS NULL;
      CREATE TABLE course_domains (
        course_id    BIGINT NOT NULL REFERENCES courses(id),
        domain_uuid  TEXT COLLATE "C" NOT NULL,
        PRIMARY KEY (course_id, domain_uuid)
      );
    )sql",
    // 9: as SQLite's 9.
    R"sql(
      ALTER TABLE usage ADD COLUMN host TEXT COLLATE "C" NOT NULL DEFAULT '',
                        ADD COLUMN gpu BIGINT NOT NULL DEFAULT 0;
      ALTER TABLE usage DROP CONSTRAINT usage_pkey,
                        ADD PRIMARY KEY (tenant_id, student_id, interval_start, host, gpu);
      CREATE TABLE hosts (
        name        TEXT COLLATE "C" PRIMARY KEY,
        started_at  BIGINT NOT NULL,
        last_seen   BIGINT NOT NULL,
        backend     TEXT NOT NULL,
        gpus        TEXT NOT NULL
      );
      CREATE TABLE host_batches (
        host      TEXT COLLATE "C" PRIMARY KEY,
        last_seq  BIGINT NOT NULL
      );
    )sql",
    // 10: as SQLite's 10.
    R"sql(
      CREATE TABLE budget_leases (
        student_id    BIGINT NOT NULL,
        tenant_id     BIGINT NOT NULL,
        window_start  BIGINT NOT NULL,
        host          TEXT COLLATE "C" NOT NULL,
        limit_ns      BIGINT NOT NULL,
        used_ns       BIGINT NOT NULL,
        expires_at    BIGINT NOT NULL,
        PRIMARY KEY (student_id, tenant_id, window_start, host)
      );
      CREATE INDEX budget_leases_by_expiry ON budget_leases(expires_at);
      ALTER TABLE vms ADD COLUMN placement TEXT CHECK (placement IN ('spread', 'pack'));
    )sql",
};
static_assert(kPostgresMigrations.size() == kSqliteMigrations.size());

}  // namespace

int latest_schema_version() { return static_cast<int>(kSqliteMigrations.size()); }

bool migrate(sql::Db& db, std::string* why, int target) {
  if (target < 0) target = latest_schema_version();
  const auto& steps =
      db.dialect() == sql::Dialect::kPostgres ? kPostgresMigrations : kSqliteMigrations;
  if (db.schema_version() == target) return true;  // the usual open: no write lock taken
  // One step per transaction, the version read inside it: several hosts that
  // open one new PostgreSQL database at once migrate it once, in turn.
  for (;;) {
    sql::Transaction tx(db);
    if (!tx.began()) {
      *why = "cannot migrate the database: " + db.error();
      return false;
    }
    const int current = db.schema_version();
    if (current < 0) {
      *why = "cannot read the schema version: " + db.error();
      return false;
    }
    if (current > latest_schema_version()) {
      *why = "the database has schema version " + std::to_string(current) +
             ", newer than this vgpu (" + std::to_string(latest_schema_version()) + ")";
      return false;
    }
    if (current >= target) return true;
    const std::string_view step = steps[static_cast<size_t>(current)];
    if ((!step.empty() && !db.exec(step, why)) || !db.set_schema_version(current + 1, why) ||
        !tx.commit()) {
      *why = "migration to schema version " + std::to_string(current + 1) + " failed: " + *why;
      return false;
    }
  }
}

}  // namespace vgpu::policy
