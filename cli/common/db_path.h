// Where vgpud keeps its SQLite database when --db is not given. The database
// holds a term's courses, quotas, usage ledger and audit log, so it lives in
// a directory that outlives a reboot, not in the runtime directory (/run/vgpu
// for root is a tmpfs on most systems):
//   root    /var/lib/vgpu/vgpu.db
//   others  $XDG_STATE_HOME/vgpu/vgpu.db, else $HOME/.local/state/vgpu/vgpu.db
#pragma once

#include <string>

namespace vgpu::cli {

// The default for the calling process ("" when a non-root user has no home).
std::string default_db_path();
// The same rule with its inputs given; null or empty strings count as unset.
std::string default_db_path(bool root, const char* xdg_state_home, const char* home);

}  // namespace vgpu::cli
