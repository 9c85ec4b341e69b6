// A host with four GPUs (vgpud --sim-devices 4): 32 VMs of two courses are
// placed by the spread policy (each GPU's committed weight within one VM's
// weight of the others), every VM's GPU shows in `vgpuctl status`, GPU
// shares hold within 5% of each VM's entitlement on its own GPU, a
// student whose two VMs run on two GPUs at once spends one budget, and a
// course whose quota says pack fills one GPU before the next.
#include <csignal>
#include <cstdio>
#include <map>
#include <set>

#include <catch2/catch.hpp>

#include "quota_harness.h"
#include "robust_harness.h"

using namespace vgpu::test;
using namespace std::chrono_literals;

namespace {
constexpr int64_t kMs = 1000000;
constexpr int kGpus = 4;
}  // namespace

TEST_CASE(
    "four GPUs: placement spreads by weight, shares hold on each GPU, one budget across "
    "them",
    "[gpus]") {
  TempDir dir;
  const std::string db = dir.path() + "/vgpu.db";
  QuotaDaemon d(
      dir.path(), db, true, {},
      {"--sim-devices", std::to_string(kGpus), "--sim-memory-gib", "1", "--placement", "spread"});
  REQUIRE(d.ready());
  auto ok = [&](const std::vector<std::string>& args) {
    const RunResult r = d.ctl(args);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
  };
  // Two courses of 16; within each, every other student weighs 2.
  std::vector<std::string> vms;
  std::map<std::string, int> weight;
  std::map<std::string, std::string> course;
  for (const std::string c : {"cs101", "cs102"}) {
    ok({"course", "create", c});
    ok({"quota", "set", "--course", c, "--gpu-time", "1h/day", "--memory", "100MiB"});
    for (int i = 0; i < 16; ++i) {
      const std::string student = c + "-s" + std::to_string(i);
      vms.push_back(c + "-vm" + std::to_string(i));
      weight[vms.back()] = i % 2 ? 2 : 1;
      course[vms.back()] = c;
      ok({"student", "add", student, "--course", c, "--vm", vms.back()});
      if (i % 2) ok({"quota", "set", student, "--weight", "2"});
    }
  }

  // Every VM runs endless 1 ms kernels.
  std::vector<std::unique_ptr<Process>> busy;
  for (const std::string& vm : vms) busy.push_back(d.start(vm, "busy", {"1000", "1000000"}));
  auto gpu_ns = [&] {
    const RunResult r = d.ctl({"--json", "top", "--count", "1", "--interval", "0.1"});
    const json j = json::parse(r.output, nullptr, false);
    std::map<std::string, double> out;
    if (j.is_object()) {
      for (const json& t : j["tenants"])
        out[t["vm"]] = static_cast<double>(t["gpu_ns"].get<uint64_t>());
    }
    return out;
  };
  REQUIRE(eventually(
      [&] {
        const auto g = gpu_ns();
        for (const std::string& vm : vms) {
          if (!g.count(vm) || g.at(vm) == 0) return false;
        }
        return true;
      },
      180s));

  // Where each VM is, from the daemon's status; the spread invariant.
  const json s = daemon_status(d.dir());
  REQUIRE(s.is_object());
  REQUIRE(s["gpus"].size() == kGpus);
  std::map<std::string, int> gpu_of;
  std::vector<double> committed(kGpus, 0);
  for (const std::string& vm : vms) {
    const json t = tenant_of(s, vm);
    INFO(vm << ": " << t.dump());
    REQUIRE(t.contains("gpu"));
    gpu_of[vm] = t["gpu"].get<int>();
    committed[static_cast<size_t>(gpu_of[vm])] += weight[vm];
  }
  for (int g = 0; g < kGpus; ++g) {
    INFO("GPU " << g);
    CHECK(s["gpus"][g]["committed_weight"].get<double>() == committed[static_cast<size_t>(g)]);
    CHECK(s["gpus"][g]["vms"].get<int>() > 0);
  }
  const auto [least, most] = std::minmax_element(committed.begin(), committed.end());
  CHECK(*most - *least <= 2);  // greedy least-loaded: within the largest weight

  // Shares over a measured window, per GPU: the courses present share it
  // equally, and within a course its VMs there by weight.
  const auto g0 = gpu_ns();
  std::this_thread::sleep_for(10s);
  const auto g1 = gpu_ns();
  for (auto& p : busy) p->signal(SIGKILL);
  for (auto& p : busy) p->wait(10s);
  double worst = 0;
  for (int g = 0; g < kGpus; ++g) {
    double total = 0;
    std::map<std::string, double> course_weight;
    for (const std::string& vm : vms) {
      if (gpu_of[vm] != g) continue;
      total += g1.at(vm) - g0.at(vm);
      course_weight[course[vm]] += weight[vm];
    }
    for (const std::string& vm : vms) {
      if (gpu_of[vm] != g) continue;
      const double share = (g1.at(vm) - g0.at(vm)) / total;
      const double entitled =
          1.0 / static_cast<double>(course_weight.size()) * weight[vm] / course_weight[course[vm]];
      const double error = std::abs(share - entitled) / entitled;
      worst = std::max(worst, error);
      INFO("GPU " << g << " " << vm << " weight " << weight[vm] << ": " << 100 * share
                  << "% (entitled " << 100 * entitled << "%)");
      CHECK(error < 0.05);
    }
  }
  std::printf("gpus: 32 VMs on %d GPUs, committed weight %.0f..%.0f, shares within %.2f%%\n", kGpus,
              *least, *most, 100 * worst);

  // One student, two VMs, a 300 ms budget: both run 400 ms of kernels at
  // once, on two GPUs (spread: the second goes where the first is not).
  REQUIRE(eventually([&] { return daemon_status(d.dir())["backend"]["contexts"] == 0; }, 30s));
  ok({"student", "add", "twin", "--course", "cs101", "--vm", "twin-a", "--vm", "twin-b"});
  ok({"quota", "set", "twin", "--gpu-time", "300ms/day", "--on-exhaust", "reject"});
  auto a = d.start("twin-a", "busy", {"2000", "200"});
  auto b = d.start("twin-b", "busy", {"2000", "200"});
  std::set<int> twin_gpus;
  CHECK(eventually(
      [&] {
        const json now = daemon_status(d.dir());
        for (const std::string vm : {"twin-a", "twin-b"}) {
          const json t = tenant_of(now, vm);
          if (t.contains("gpu")) twin_gpus.insert(t["gpu"].get<int>());
        }
        return twin_gpus.size() == 2;
      },
      60s));
  const RunResult ra = a->wait(120s), rb = b->wait(120s);
  INFO(ra.output << rb.output);
  CHECK_THAT(ra.output + rb.output, Catch::Contains("GPU-time quota exhausted"));
  REQUIRE(d.ctl({"usage", "flush"}).exit_code == 0);
  const int64_t twin_ns = query_int(db,
                                    "SELECT coalesce(sum(gpu_ns), 0) FROM usage WHERE student_id = "
                                    "(SELECT id FROM students WHERE name = 'twin')");
  std::printf("gpus: the twin's two VMs spent %.1f ms of a 300 ms budget\n", double(twin_ns) / kMs);
  CHECK(twin_ns >= 300 * kMs);
  // Each GPU may overrun by at most one kernel (2 ms) past the budget.
  CHECK(twin_ns <= 300 * kMs + 2 * 2 * kMs + 4 * kMs);

  // A course that packs (its quota overrides the host's spread): with
  // 300 MiB caps on 1 GiB GPUs, three VMs fill GPU 0 before one goes on.
  REQUIRE(eventually([&] { return daemon_status(d.dir())["backend"]["contexts"] == 0; }, 30s));
  ok({"course", "create", "lab"});
  ok({"quota", "set", "--course", "lab", "--memory", "300MiB", "--placement", "pack"});
  std::vector<std::unique_ptr<Process>> lab;
  for (int i = 0; i < 4; ++i) {
    const std::string vm = "lab-vm" + std::to_string(i);
    ok({"student", "add", "lab-s" + std::to_string(i), "--course", "lab", "--vm", vm});
    lab.push_back(d.start(vm, "busy", {"1000", "1000000"}));
  }
  std::map<int, int> per_gpu;
  CHECK(eventually(
      [&] {
        const json now = daemon_status(d.dir());
        per_gpu.clear();
        for (int i = 0; i < 4; ++i) {
          const json t = tenant_of(now, "lab-vm" + std::to_string(i));
          if (!t.contains("gpu")) return false;
          per_gpu[t["gpu"].get<int>()]++;
        }
        return true;
      },
      60s));
  CHECK(per_gpu == std::map<int, int>{{0, 3}, {1, 1}});
  // `vgpuctl top` shows the same GPUs.
  const json top = d.ctl_json({"--json", "top", "--count", "1", "--interval", "0.1"});
  std::map<int, int> top_per_gpu;
  for (const json& t : top["tenants"]) {
    if (t["vm"].get<std::string>().rfind("lab-vm", 0) == 0) top_per_gpu[t["gpu"].get<int>()]++;
  }
  CHECK(top_per_gpu == per_gpu);
  for (auto& p : lab) p->signal(SIGKILL);
  for (auto& p : lab) p->wait(10s);

  // A VM whose cap no GPU can hold is refused when it connects, and told why.
  ok({"course", "create", "big"});
  ok({"quota", "set", "--course", "big", "--memory", "2GiB"});
  ok({"student", "add", "big-s", "--course", "big", "--vm", "big-vm"});
  const RunResult big = d.run("big-vm", "vector_add");
  INFO(big.output);
  CHECK(big.exit_code != 0);
  CHECK_THAT(big.output, Catch::Contains("more than any GPU of this host has"));
  CHECK(d.stop().exit_code == 0);
}

#ifdef VGPU_TEST_FAKE_LIBCUDA
// The cuda backend with several GPUs, against the fake driver (three
// devices): `--cuda-device all` takes every GPU the driver sees (a probe
// worker each, and no fourth), and vgpud's status lists them.
TEST_CASE("cuda backend: --cuda-device all serves every GPU the driver sees", "[gpus]") {
  TempDir dir;
  Process vgpud({vgpud_path(), "--backend", "cuda", "--cuda-device", "all", "--runtime-dir",
                 dir.path(), "--db", dir.path() + "/vgpu.db", "--libvirt", "none"},
                dir.path() + "/vgpud.log",
                {"VGPU_CUDA_DRIVER=" VGPU_TEST_FAKE_LIBCUDA, "VGPU_FAKE_CUDA_DEVICES=3",
                 "VGPU_FAKE_CUDA_DEVICE_FILE=" + dir.path() + "/fake-device"});
  REQUIRE(vgpud.wait_for_output("vgpud: serving on", 60s));
  const json s = daemon_status(dir.path());
  INFO(vgpud.output_so_far());
  REQUIRE(s.is_object());
  CHECK(s["backend"]["name"] == "cuda");
  REQUIRE(s["gpus"].size() == 3);
  for (int g = 0; g < 3; ++g) {
    CHECK(s["gpus"][g]["index"] == g);
    CHECK(s["gpus"][g]["memory_total"].get<uint64_t>() > 0);
  }
  const std::string log = vgpud.output_so_far();
  for (const char* line : {"cuda: device 0 ", "cuda: device 1 ", "cuda: device 2 "}) {
    CHECK_THAT(log, Catch::Contains(line));
  }
  CHECK_THAT(log, !Catch::Contains("cuda: device 3 "));
  vgpud.signal(SIGTERM);
  CHECK(vgpud.wait(30s).exit_code == 0);
}

// A program's copies on the cuda backend (the fake driver's memory is real
// memory): 60,000 small copies queued on a stream go to the worker in
// batches, the large copy back straight from the VM's data area, which the
// worker registered with the driver; the results are right.
TEST_CASE(
    "cuda backend: small copies go in batches, large ones straight from the registered data area",
    "[gpus]") {
  TempDir dir;
  QuotaDaemon d(dir.path(), dir.path() + "/vgpu.db", true,
                {"VGPU_CUDA_DRIVER=" VGPU_TEST_FAKE_LIBCUDA,
                 "VGPU_FAKE_CUDA_DEVICE_FILE=" + dir.path() + "/fake-device"},
                {"--backend", "cuda"});
  INFO(d.log());
  REQUIRE(d.ready());
  const RunResult r = d.run("vm1", "many_copies");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  const json s = daemon_status(dir.path());
  REQUIRE(s.is_object());
  CHECK(s["backend"]["name"] == "cuda");
  // 240,000 bytes back in one copy, straight into the data area; the small ones in the batches'
  // messages.
  CHECK(s["backend"]["direct_copy_bytes"].get<uint64_t>() >= 240000);
  CHECK(s["backend"]["staged_copy_bytes"].get<uint64_t>() >= 240000);
  CHECK(d.stop().exit_code == 0);
}
#endif
