#include "journal_log.h"

#include "vgpu/host/vm_people.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace vgpu::daemon {

using host::people_of_vm;
using host::VmPeople;

namespace {

// syslog(3)'s levels, which journald's PRIORITY= takes.
int priority_of(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug:
      return 7;
    case spdlog::level::info:
      return 6;
    case spdlog::level::warn:
      return 4;
    case spdlog::level::err:
      return 3;
    case spdlog::level::critical:
      return 2;
    default:
      return 6;
  }
}

// "vm NAME: ..." -> NAME (a VM name is [A-Za-z0-9._-]{1,63}); else empty.
std::string_view vm_of(std::string_view message) {
  constexpr std::string_view prefix = "vm ";
  if (message.substr(0, prefix.size()) != prefix) return {};
  const std::string_view rest = message.substr(prefix.size());
  size_t n = 0;
  while (n < rest.size() && n < 64 &&
         (std::isalnum(static_cast<unsigned char>(rest[n])) || rest[n] == '.' || rest[n] == '_' ||
          rest[n] == '-'))
    n++;
  if (n == 0 || n > 63 || n == rest.size() || rest[n] != ':') return {};
  return rest.substr(0, n);
}

class JournalSink final : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const std::vector<std::string> fields =
        journal_fields(msg.level, std::string_view(msg.payload.data(), msg.payload.size()));
    std::vector<iovec> iov(fields.size());
    for (size_t i = 0; i < fields.size(); i++)
      iov[i] = {const_cast<char*>(fields[i].data()), fields[i].size()};
    sd_journal_sendv(iov.data(), static_cast<int>(iov.size()));
  }
  void flush_() override {}
};

}  // namespace

std::vector<std::string> journal_fields(spdlog::level::level_enum level, std::string_view message) {
  std::vector<std::string> fields;
  fields.push_back("MESSAGE=" + std::string(message));
  fields.push_back("PRIORITY=" + std::to_string(priority_of(level)));
  fields.push_back("SYSLOG_IDENTIFIER=vgpud");
  const std::string vm(vm_of(message));
  if (vm.empty()) return fields;
  fields.push_back("VM=" + vm);
  const std::optional<VmPeople> who = people_of_vm(vm);
  if (!who) return fields;
  if (!who->student.empty()) fields.push_back("STUDENT=" + who->student);
  if (!who->course.empty()) fields.push_back("COURSE=" + who->course);
  return fields;
}

bool stderr_is_journal() {
  const char* stream = std::getenv("JOURNAL_STREAM");
  if (!stream) return false;
  struct stat st{};
  if (fstat(STDERR_FILENO, &st) != 0) return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(stream, "%llu:%llu", &dev, &ino) != 2) return false;
  return dev == static_cast<unsigned long long>(st.st_dev) &&
         ino == static_cast<unsigned long long>(st.st_ino);
}

void log_to_journal() {
  auto logger = spdlog::default_logger();
  logger->sinks().clear();
  logger->sinks().push_back(std::make_shared<JournalSink>());
}

}  // namespace vgpu::daemon
