// The schema, as an ordered list of migrations, in each engine's SQL. The
// database's schema version (SQLite's user_version, PostgreSQL's
// vgpu_schema table) says how many have run; opening a database runs the
// rest, each in its own transaction. Migrations are never edited once
// released: add a new one.
#pragma once

#include <string>

#include "sql.h"

namespace vgpu::policy {

int latest_schema_version();
// Brings the database to `target` (default: latest). False with `why` on failure.
bool migrate(sql::Db& db, std::string* why, int target = -1);

}  // namespace vgpu::policy
