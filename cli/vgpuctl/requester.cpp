#include "requester.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "admin_ops.h"
#include "admin_protocol.h"
#include "vgpu/policy/store.h"

namespace vgpu::ctl {
namespace {

bool unpack(const json& answer, json* result, std::string* why) {
  if (!answer.is_object() || !answer.contains("ok")) {
    *why = "vgpud sent an answer vgpuctl does not understand";
    return false;
  }
  if (!answer["ok"].get<bool>()) {
    *why = answer.value("error", std::string("failed"));
    return false;
  }
  *result = answer.value("result", json());
  return true;
}

class DaemonRequester final : public Requester {
 public:
  explicit DaemonRequester(int fd) : fd_(fd) {}
  ~DaemonRequester() override { close(fd_); }

  bool call(const json& request, json* result, std::string* why) override {
    json stamped = request;
    if (stamped.is_object()) stamped["protocol"] = admin::kProtocolVersion;  // vgpud checks it
    const std::string line = stamped.dump() + "\n";
    for (size_t done = 0; done < line.size();) {
      const ssize_t n = send(fd_, line.data() + done, line.size() - done, MSG_NOSIGNAL);
      if (n <= 0) {
        *why = "lost the connection to vgpud";
        return false;
      }
      done += static_cast<size_t>(n);
    }
    size_t nl;
    while ((nl = buffer_.find('\n')) == std::string::npos) {
      char buf[65536];
      const ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        *why = "lost the connection to vgpud";
        return false;
      }
      buffer_.append(buf, static_cast<size_t>(n));
    }
    const json answer = json::parse(buffer_.substr(0, nl), nullptr, false);
    buffer_.erase(0, nl + 1);
    return unpack(answer, result, why);
  }

 private:
  int fd_;
  std::string buffer_;
};

class DatabaseRequester final : public Requester {
 public:
  explicit DatabaseRequester(std::unique_ptr<policy::Store> store) : store_(std::move(store)) {
    // Whoever can read the file (or log in to the server) sees everything in it.
    actor_.uid = static_cast<uint32_t>(getuid());
    actor_.name = "uid " + std::to_string(actor_.uid) + " (database)";
    actor_.role = policy::Role::kAdmin;
  }

  bool call(const json& request, json* result, std::string* why) override {
    const std::string op = request.value("op", "");
    if (admin::is_change(op)) {
      *why =
          "changes go through vgpud so that they apply at once: run without --db "
          "(vgpud must be running)";
      return false;
    }
    const admin::OpResult r =
        admin::execute(*store_, actor_, request, static_cast<int64_t>(std::time(nullptr)));
    return unpack(r.answer, result, why);
  }

 private:
  std::unique_ptr<policy::Store> store_;
  policy::Actor actor_;
};

}  // namespace

std::unique_ptr<Requester> connect_daemon(const std::string& runtime_dir, std::string* why) {
  const std::string path = runtime_dir + "/" + std::string(admin::kAdminSocketName);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    *why = "runtime directory path too long: " + runtime_dir;
    return nullptr;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const int err = errno;
    if (fd >= 0) close(fd);
    *why = err == EACCES ? "cannot reach " + path + ": permission denied"
                         : "vgpud is not running at " + runtime_dir + " (no " + path +
                               "); start it, or read a database with --db FILE";
    return nullptr;
  }
  return std::make_unique<DaemonRequester>(fd);
}

std::unique_ptr<Requester> open_database(const std::string& path, std::string* why) {
  if (!policy::is_postgres_location(path) && access(path.c_str(), R_OK) != 0) {
    *why = "cannot read " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  std::unique_ptr<policy::Store> store;
  if (const vgpu::Result opened = policy::open_store(path, &store, {.read_only = true});
      !opened.ok()) {
    *why = opened.message();
    return nullptr;
  }
  return std::make_unique<DatabaseRequester>(std::move(store));
}

}  // namespace vgpu::ctl
