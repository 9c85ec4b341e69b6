// Quotas enforced by a real vgpud on real CUDA programs: a spent GPU-time
// budget rejects with a clear error, waits until a teacher raises it, or runs
// on best-effort; the memory cap refuses a cudaMalloc past it.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <thread>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "quota_harness.h"

using namespace vgpu::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

constexpr int64_t kMs = 1000000;

struct Course {
  TempDir dir;
  std::string db = dir.path() + "/vgpu.db";
  QuotaDaemon daemon{dir.path(), db};

  explicit Course(const std::vector<std::string>& quota) {
    ctl({"course", "create", "cs101"});
    ctl({"student", "add", "sam", "--course", "cs101", "--vm", "sam-vm"});
    std::vector<std::string> args = {"quota", "set", "sam"};
    args.insert(args.end(), quota.begin(), quota.end());
    ctl(args);
  }
  void ctl(const std::vector<std::string>& args) {
    const RunResult r = daemon.ctl(args);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
  }
  // GPU time charged to sam this period, as the daemon wrote it.
  int64_t used_ns() {
    const RunResult r = daemon.ctl({"--json", "student", "show", "sam"});
    REQUIRE(r.exit_code == 0);
    return json::parse(r.output)["period"]["used_ns"].get<int64_t>();
  }
  int64_t used_after_flush() {
    REQUIRE(daemon.ctl({"usage", "flush"}).exit_code == 0);  // what vgpud measured, written now
    return used_ns();
  }
};

}  // namespace

TEST_CASE("reject: a program past its GPU-time budget gets a clear CUDA error", "[quota]") {
  Course c({"--gpu-time", "300ms/day", "--on-exhaust", "reject"});
  // 400 kernels of 2 ms: 800 ms of work against a 300 ms budget.
  const RunResult r = c.daemon.run("sam-vm", "busy", {"2000", "400"});
  INFO(r.output);
  CHECK_FALSE(r.timed_out);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Catch::Contains("vgpu: GPU-time quota exhausted"));
  CHECK_THAT(r.output, Catch::Contains("cudaErrorNotPermitted"));
  CHECK_THAT(c.daemon.log(), Catch::Contains("GPU-time quota 300ms/day exhausted"));
  // The budget held: at most one slice (one 2 ms kernel past a 2 ms slice) over.
  const int64_t used = c.used_after_flush();
  CHECK(used >= 300 * kMs);
  CHECK(used <= 300 * kMs + 6 * kMs);
  // And it stays shut: the next program is refused at once.
  const RunResult again = c.daemon.run("sam-vm", "busy", {"2000", "10"});
  CHECK(again.exit_code != 0);
  CHECK_THAT(again.output, Catch::Contains("GPU-time quota exhausted"));
}

TEST_CASE("wait: a program blocks at its budget and continues when a teacher raises it",
          "[quota]") {
  Course c({"--gpu-time", "200ms/day", "--on-exhaust", "wait"});
  auto p = c.daemon.start("sam-vm", "busy", {"2000", "250"});  // 500 ms of work
  // It runs up to its budget, then waits.
  bool waiting = false;
  for (int i = 0; i < 100 && !waiting; ++i) {
    std::this_thread::sleep_for(100ms);
    const RunResult top = c.daemon.ctl({"--json", "top", "--count", "1", "--interval", "0.1"});
    waiting = top.output.find("waiting (quota)") != std::string::npos;
  }
  REQUIRE(waiting);
  REQUIRE(p->running());  // held by the quota, not finished
  c.ctl({"quota", "set", "sam", "--gpu-time", "1h/day"});
  const RunResult r = p->wait(60s);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("PASS busy"));
  CHECK_THAT(c.daemon.log(), Catch::Contains("its work waits"));
}

TEST_CASE("best-effort: past its budget a program runs on, behind the others", "[quota]") {
  Course c({"--gpu-time", "100ms/day", "--on-exhaust", "best-effort"});
  const RunResult r = c.daemon.run("sam-vm", "busy", {"2000", "150"});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(c.daemon.log(), Catch::Contains("runs best-effort"));
  CHECK(c.used_after_flush() >= 300 * kMs);  // all of it is on the ledger
}

TEST_CASE("the memory cap refuses a cudaMalloc past it and allocates nothing", "[quota]") {
  Course c({"--memory", "64MiB"});
  const RunResult r = c.daemon.run("sam-vm", "alloc", {"40", "2"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("total_mib 64"));
  CHECK_THAT(r.output, Catch::Contains("malloc 1 cudaSuccess"));
  CHECK_THAT(r.output, Catch::Contains("malloc 2 cudaErrorMemoryAllocation"));
  CHECK_THAT(r.output, Catch::Contains("after_free cudaSuccess"));
  // A raised cap applies at once.
  c.ctl({"quota", "set", "sam", "--memory", "128MiB"});
  const RunResult raised = c.daemon.run("sam-vm", "alloc", {"40", "2"});
  CHECK_THAT(raised.output, Catch::Contains("malloc 2 cudaSuccess"));
}

TEST_CASE("NVML shows a VM its memory cap as the GPU's memory", "[quota]") {
  Course c({"--memory", "64MiB"});
  const RunResult r = c.daemon.run("sam-vm", "nvml_query");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("count=1 "));
  CHECK_THAT(r.output, Catch::Contains(" total=67108864 "));
  // A raised cap shows at once.
  c.ctl({"quota", "set", "sam", "--memory", "128MiB"});
  const RunResult raised = c.daemon.run("sam-vm", "nvml_query");
  INFO(raised.output);
  CHECK_THAT(raised.output, Catch::Contains(" total=134217728 "));
}

TEST_CASE("unassigned VMs run under the default quota, or are refused when the admin says so",
          "[quota]") {
  Course c({"--gpu-time", "1h/day"});
  const RunResult free_run = c.daemon.run("stranger", "saxpy");
  CHECK(free_run.exit_code == 0);
  c.ctl({"quota", "set", "--default", "--unassigned", "refuse"});
  const RunResult refused = c.daemon.run("stranger", "saxpy");
  INFO(refused.output);
  CHECK(refused.exit_code != 0);
  CHECK_THAT(refused.output, Catch::Contains("not bound to a student"));
  CHECK(c.daemon.run("sam-vm", "saxpy").exit_code == 0);
  // The unassigned VM's earlier usage shows in the admin's report.
  REQUIRE(c.daemon.ctl({"usage", "flush"}).exit_code == 0);
  const RunResult report = c.daemon.ctl({"usage", "report"});
  CHECK_THAT(report.output, Catch::Contains("(unassigned)"));
  CHECK_THAT(report.output, Catch::Contains("stranger"));
}

TEST_CASE("top shows each VM's share of the GPU, its queue and its budget", "[quota]") {
  Course c({"--gpu-time", "1h/day"});
  auto p = c.daemon.start("sam-vm", "busy", {"2000", "5000"});  // 10 s of work: killed below
  // Until sam's kernels have run (its program may take a while to start on a
  // loaded machine), then the table a teacher sees.
  REQUIRE(c.daemon.wait_for_state("sam-vm", "busy", *p));
  const RunResult top = c.daemon.ctl({"top", "--count", "1", "--interval", "0.5"});
  p->signal(SIGKILL);
  p->wait(10s);
  INFO(top.output);
  REQUIRE(top.exit_code == 0);
  CHECK_THAT(top.output, Catch::Contains("GPU SHARE"));
  CHECK_THAT(top.output, Catch::Contains("sam-vm"));
  CHECK_THAT(top.output, Catch::Contains("1h/day"));
  CHECK_THAT(top.output, Catch::Contains("busy"));
  CHECK_THAT(top.output,
             Catch::Matches("(?:.|\\n)*sam-vm +0 +sam +cs101 +busy +[1-9][0-9]*%(?:.|\\n)*"));
}

namespace {

// A raw admin-socket client: what any local user (or a broken vgpuctl) can send.
class AdminPeer {
 public:
  explicit AdminPeer(const std::string& socket) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socket.c_str(), sizeof addr.sun_path - 1);
    connected_ = fd_ >= 0 && connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~AdminPeer() {
    if (fd_ >= 0) close(fd_);
  }
  bool connected() const { return connected_; }
  // Sends one line and returns the answer line ("" if the connection ended).
  std::string ask(const std::string& line) {
    const std::string out = line + "\n";
    if (send(fd_, out.data(), out.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(out.size())) return "";
    std::string answer;
    char ch = 0;
    while (recv(fd_, &ch, 1, 0) == 1 && ch != '\n') answer.push_back(ch);
    return answer;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

}  // namespace

TEST_CASE("admin requests with fields of the wrong type get an error; vgpud serves on",
          "[quota]") {
  Course c({"--gpu-time", "1h/day"});
  AdminPeer peer(c.dir.path() + "/vgpud-admin.sock");
  REQUIRE(peer.connected());
  // Each was, or could be, read with json::value(), which throws on a type
  // mismatch; {"op": 1} ended the daemon.
  for (const std::string request :
       {R"({"op": 1})", R"({"op": null})", R"({"op": ["top"]})", R"([1, 2])", R"("status")",
        R"({"op": "vm.attach", "vm": "sam-vm", "student": "sam", "uuid": 5, "dry_run": "yes"})",
        R"({"op": "vm.detach", "vm": 7, "dry_run": 1})", R"({"op": "usage.report", "since": "yesterday"})",
        R"({"op": "course.delete", "name": "cs101", "force": "yes"})",
        R"({"op": "audit.list", "since": {}})", R"({"op": "vm.sessions", "since": 1.5})"}) {
    const json answer = json::parse(peer.ask(request), nullptr, false);
    INFO(request << " -> " << answer.dump());
    REQUIRE(answer.is_object());
    CHECK(answer["ok"] == false);
    CHECK(answer["error"].is_string());
  }
  // A vgpuctl of another release is told so, by version.
  for (const std::string other : {R"({"op": "top", "protocol": 2})", R"({"op": "top", "protocol": "1"})"}) {
    const json answer = json::parse(peer.ask(other), nullptr, false);
    INFO(other << " -> " << answer.dump());
    CHECK(answer["ok"] == false);
    CHECK_THAT(answer.value("error", ""), Catch::Contains("vgpud speaks 1"));
  }
  CHECK(json::parse(peer.ask(R"({"op": "top", "protocol": 1})"), nullptr, false)["ok"] == true);
  // The same connection, and the daemon, still answer; nothing changed.
  const json top = json::parse(peer.ask(R"({"op": "top"})"), nullptr, false);
  CHECK(top["ok"] == true);
  const RunResult course = c.daemon.ctl({"course", "list"});
  INFO(course.output);
  CHECK(course.exit_code == 0);
  CHECK_THAT(course.output, Catch::Contains("cs101"));
}
