// Where vgpuctl's requests go: the daemon's admin socket (changes apply
// live; the daemon decides the role from our uid), or a database file read
// directly with --db while the daemon is down (reads only).
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace vgpu::ctl {

using nlohmann::json;

class Requester {
 public:
  virtual ~Requester() = default;
  // Sends one request; on success `result` is the answer's result, else
  // `why` is the one-line error.
  virtual bool call(const json& request, json* result, std::string* why) = 0;
};

// Connects to <runtime_dir>/vgpud-admin.sock; null with `why` if vgpud is not there.
std::unique_ptr<Requester> connect_daemon(const std::string& runtime_dir, std::string* why);
// Opens a database file read-only.
std::unique_ptr<Requester> open_database(const std::string& path, std::string* why);

}  // namespace vgpu::ctl
