// vgpud's log in the systemd journal (sd_journal_send(3)) when systemd runs
// it with its standard error going to the journal: each line with its
// PRIORITY and the fields an admin filters by, so that
//   journalctl -u vgpud VM=alice      journalctl COURSE=gpu101 -p warning
// work. VM= comes from the line (the daemon starts every line about one VM
// with "vm NAME:"); STUDENT= and COURSE= from who the VM belonged to when it
// was last admitted (vm_people.h).
#pragma once

#include <spdlog/common.h>

#include <string>
#include <string_view>
#include <vector>

namespace vgpu::daemon {

// The journal fields of one log line, "FIELD=value" each, MESSAGE first.
std::vector<std::string> journal_fields(spdlog::level::level_enum level, std::string_view message);

// True when $JOURNAL_STREAM names this process's standard error (systemd
// connected it to the journal): log there, not to a stream journald would
// record again without fields.
bool stderr_is_journal();

// Sends the default logger's lines to the journal instead of standard error.
void log_to_journal();

}  // namespace vgpu::daemon
