// `vgpuctl vm attach|detach|list` against libvirt's test driver and a real
// vgpud. The commands run in this process (vgpuctl_lib), because every
// connection to test:///default in one process shares one state: the test
// defines domains and reads their persistent XML on its own connection.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>

#include "context.h"
#include "quota_harness.h"
#include "shmem_xml.h"
#include "test_driver.h"
#include "vm_commands.h"

using namespace vgpu;
using namespace vgpu::test;
using nlohmann::json;

namespace {

constexpr const char* kUuid = "40000000-0000-4000-8000-000000000001";

struct Captured {
  int code = -1;
  std::string out, err;
};

// Runs `f` with stdout and stderr going to files, and gives back both.
Captured capture(const std::string& dir, const std::function<int()>& f) {
  std::fflush(stdout);
  std::fflush(stderr);
  const std::string out_path = dir + "/cli.out", err_path = dir + "/cli.err";
  const int saved_out = dup(1), saved_err = dup(2);
  const int out_fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  const int err_fd = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  dup2(out_fd, 1);
  dup2(err_fd, 2);
  Captured c;
  c.code = f();
  std::fflush(stdout);
  std::fflush(stderr);
  dup2(saved_out, 1);
  dup2(saved_err, 2);
  for (int fd : {saved_out, saved_err, out_fd, err_fd}) close(fd);
  c.out = read_file(out_path);
  c.err = read_file(err_path);
  return c;
}

size_t lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

struct Lab {
  TempDir dir;
  QuotaDaemon daemon{dir.path(), dir.path() + "/vgpu.db"};
  virt::test::TestConnection tc;
  virt::test::TestDomain domain{tc.get(), "lab-1", kUuid};
  ctl::Context ctx;

  Lab() {
    REQUIRE(domain.defined());
    ctx.runtime_dir = dir.path();
    ctx.libvirt_uri = virt::test::kTestUri;
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"course", "create", "cs101"},
          std::vector<std::string>{"student", "add", "alice", "--course", "cs101"},
          std::vector<std::string>{"student", "add", "bob", "--course", "cs101"}}) {
      const RunResult r = daemon.ctl(args);
      INFO(r.output);
      REQUIRE(r.exit_code == 0);
    }
  }
  Captured attach(const std::string& domain_name, const std::string& student,
                  const std::string& vm = "") {
    return capture(dir.path(), [&] { return ctl::attach_domain(ctx, domain_name, student, vm); });
  }
  Captured detach(const std::string& domain_name) {
    return capture(dir.path(), [&] { return ctl::detach_domain(ctx, domain_name); });
  }
  // vgpud's VMs attached to a domain: name -> (student, uuid).
  json attached() {
    json vms;
    REQUIRE(ctx.call({{"op", "vm.list"}}, &vms));
    json out = json::object();
    for (const json& v : vms) {
      if (!v.value("domain_uuid", "").empty()) out[v.value("name", "")] = v;
    }
    return out;
  }
};

}  // namespace

TEST_CASE("attach adds exactly the vgpu device and the binding; detach takes both back",
          "[vmcli]") {
  Lab lab;
  const std::string before = lab.domain.persistent_xml();

  const Captured a = lab.attach("lab-1", "alice");
  INFO(a.out << a.err);
  REQUIRE(a.code == 0);
  CHECK_THAT(a.out, Catch::Contains("attached domain lab-1 (" + std::string(kUuid) +
                                    ") to vgpu as VM lab-1 for student alice"));
  CHECK_THAT(a.out, Catch::Contains("the device appears when the domain starts"));

  // The domain has one vgpu device, the one vgpud serves, and nothing else changed.
  virt::DomainXml parsed;
  const std::string after = lab.domain.persistent_xml();
  REQUIRE(virt::parse_domain_xml(after, &parsed).ok());
  REQUIRE(parsed.devices.size() == 1);
  const virt::VgpuDevice& dev = parsed.devices[0];
  CHECK(dev.name == "vgpu-lab-1");
  CHECK(dev.model == "ivshmem-doorbell");
  CHECK(dev.server_path == lab.dir.path() + "/vms/lab-1.sock");
  CHECK(dev.vectors == virt::kMsiVectors);
  // libvirt's own text of the definition, less the <shmem> element, is as before.
  const size_t from = after.find("    <shmem name='vgpu-lab-1'>");
  const size_t to = after.find("</shmem>\n", from);
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  CHECK(after.substr(0, from) + after.substr(to + 9) == before);
  json bound = lab.attached();
  REQUIRE(bound.contains("lab-1"));
  CHECK(bound["lab-1"]["student"] == "alice");
  CHECK(bound["lab-1"]["domain_uuid"] == kUuid);

  // Again, as it is: nothing changes, and it says so.
  const Captured again = lab.attach(kUuid, "alice");
  INFO(again.out << again.err);
  CHECK(again.code == 0);
  CHECK_THAT(again.out, Catch::Contains("nothing changed"));
  CHECK(lab.domain.persistent_xml() == after);
  lab.ctx.json_output = true;  // and as JSON, for scripts
  const Captured again_json = lab.attach("lab-1", "alice");
  lab.ctx.json_output = false;
  CHECK(again_json.code == 0);
  CHECK(json::parse(again_json.out)["changed"] == false);

  // Detach: the XML is what it was before, byte for byte; the binding is gone.
  const Captured d = lab.detach("lab-1");
  INFO(d.out << d.err);
  REQUIRE(d.code == 0);
  CHECK_THAT(d.out, Catch::Contains("detached domain lab-1 from vgpu (VM lab-1, student alice"));
  CHECK(lab.domain.persistent_xml() == before);
  CHECK_FALSE(lab.attached().contains("lab-1"));

  // And again: nothing to do.
  const Captured d2 = lab.detach("lab-1");
  CHECK(d2.code == 0);
  CHECK_THAT(d2.out, Catch::Contains("not attached to vgpu: nothing changed"));
  CHECK(lab.domain.persistent_xml() == before);
}

TEST_CASE("refused attaches are one line and change nothing", "[vmcli]") {
  Lab lab;
  const std::string before = lab.domain.persistent_xml();

  SECTION("an unknown domain") {
    const Captured c = lab.attach("no-such-domain", "alice");
    CHECK(c.code != 0);
    CHECK(lines(c.err) == 1);
    CHECK_THAT(c.err, Catch::Contains("no-such-domain"));
    CHECK(c.out.empty());
  }
  SECTION("a student vgpu does not know") {
    const Captured c = lab.attach("lab-1", "mallory");
    CHECK(c.code != 0);
    CHECK(lines(c.err) == 1);
    CHECK_THAT(c.err, Catch::Contains("mallory"));
    CHECK(lab.domain.persistent_xml() == before);
    CHECK(lab.attached().empty());
  }
  SECTION("a domain already attached to another student") {
    REQUIRE(lab.attach("lab-1", "alice").code == 0);
    const std::string attached_xml = lab.domain.persistent_xml();
    const json bound = lab.attached();
    const Captured c = lab.attach("lab-1", "bob");
    CHECK(c.code != 0);
    CHECK(lines(c.err) == 1);
    CHECK_THAT(c.err, Catch::Contains("already attached"));
    CHECK(lab.domain.persistent_xml() == attached_xml);
    CHECK(lab.attached() == bound);
  }
  SECTION("unknown domains and students leave the database alone") {
    lab.attach("no-such-domain", "alice");
    lab.attach("lab-1", "mallory");
    lab.daemon.stop();
    const std::string db = lab.daemon.dir() + "/vgpu.db";
    CHECK(query_int(db, "SELECT count(*) FROM vms") == 0);
    CHECK(query_int(db, "SELECT count(*) FROM vm_sessions") == 0);
    CHECK(query_int(db, "SELECT count(*) FROM students") == 2);
  }
}

TEST_CASE("vm list shows every domain with its binding and state", "[vmcli]") {
  Lab lab;
  REQUIRE(lab.attach("lab-1", "alice").code == 0);
  REQUIRE(lab.domain.start());
  lab.ctx.json_output = true;
  const Captured c = capture(lab.dir.path(), [&] {
    std::vector<std::string> argv = {"vgpuctl", "vm", "list", "--interval", "0"};
    CLI::App app;
    ctl::add_vm_commands(app, lab.ctx);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    app.parse(static_cast<int>(args.size()), args.data());
    return lab.ctx.action ? lab.ctx.action() : 2;
  });
  INFO(c.out << c.err);
  REQUIRE(c.code == 0);
  const json rows = json::parse(c.out);
  bool saw_lab = false, saw_default = false;
  for (const json& r : rows) {
    if (r["domain"] == "lab-1") {
      saw_lab = true;
      CHECK(r["vm"] == "lab-1");
      CHECK(r["student"] == "alice");
      CHECK(r["state"] == "running");
      CHECK(r["attached"] == true);
    }
    if (r["domain"] == "test") {  // the test driver's own domain: not vgpu's
      saw_default = true;
      CHECK(r["attached"] == false);
    }
  }
  CHECK(saw_lab);
  CHECK(saw_default);
}

TEST_CASE("vm allow names a domain (looked up in libvirt) its course's teachers may attach", "[vmcli]") {
  Lab lab;
  const Captured a = capture(lab.dir.path(), [&] { return ctl::allow_domain(lab.ctx, "lab-1", "cs101", true); });
  INFO(a.out << a.err);
  REQUIRE(a.code == 0);
  CHECK_THAT(a.out, Catch::Contains("course cs101's teachers may attach domain lab-1"));
  json course;
  REQUIRE(lab.ctx.call({{"op", "course.show"}, {"name", "cs101"}}, &course));
  CHECK(course["domains"] == json::array({kUuid}));
  const Captured missing =
      capture(lab.dir.path(), [&] { return ctl::allow_domain(lab.ctx, "no-such-domain", "cs101", true); });
  CHECK(missing.code != 0);
  const Captured back = capture(lab.dir.path(), [&] { return ctl::allow_domain(lab.ctx, kUuid, "cs101", false); });
  INFO(back.out << back.err);
  REQUIRE(back.code == 0);
  REQUIRE(lab.ctx.call({{"op", "course.show"}, {"name", "cs101"}}, &course));
  CHECK(course["domains"].empty());
}
