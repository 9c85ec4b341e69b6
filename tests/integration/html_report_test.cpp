// The HTML usage report opens in headless Chromium with no console output (no
// script errors), its script runs, and both charts are there with bars.
#include <filesystem>
#include <regex>
#include <thread>

#include <catch2/catch.hpp>

#include "quota_harness.h"

using namespace vgpu::test;
using namespace std::chrono_literals;

TEST_CASE("the HTML report renders in headless Chromium with its charts and no errors", "[html]") {
  const std::string chromium = chromium_path();
  INFO("Chromium is needed for this test (scripts/install-deps.sh installs it)");
  REQUIRE_FALSE(chromium.empty());

  TempDir dir;
  QuotaDaemon d(dir.path(), dir.path() + "/vgpu.db");
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"course", "create", "cs101"},
           {"student", "add", "alice", "--course", "cs101", "--vm", "alice-vm"},
           {"student", "add", "bob", "--course", "cs101", "--vm", "bob-vm"},
           {"student", "add", "carol", "--course", "cs101", "--vm", "carol-vm"},
           {"quota", "set", "--course", "cs101", "--gpu-time", "2h/week"},
           {"quota", "set", "bob", "--gpu-time", "50ms/day", "--on-exhaust", "best-effort"}}) {
    REQUIRE(d.ctl(args).exit_code == 0);
  }
  REQUIRE(d.run("alice-vm", "busy", {"2000", "40"}).exit_code == 0);
  REQUIRE(d.run("bob-vm", "busy", {"2000", "60"}).exit_code == 0);
  REQUIRE(d.run("stray-vm", "saxpy").exit_code == 0);
  REQUIRE(d.ctl({"usage", "flush"}).exit_code == 0);

  const std::string html = dir.path() + "/report.html";
  const RunResult report = d.ctl({"usage", "report", "--html", html});
  INFO(report.output);
  REQUIRE(report.exit_code == 0);
  const std::string page = read_file(html);
  // Nothing fetched from anywhere: the only URL is the SVG namespace name.
  CHECK_THAT(std::regex_replace(page, std::regex("http://www.w3.org/2000/svg"), ""),
             !Catch::Contains("http"));
  CHECK_THAT(page, !Catch::Contains("src="));  // nothing loaded from anywhere
  CHECK_THAT(page, !Catch::Contains("href="));

  const std::string profile = dir.path() + "/chromium-profile";
  const std::string out = dir.path() + "/dom.html", err = dir.path() + "/chromium.log";
  const std::string cmd =
      "timeout 60 " + chromium +
      " --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking"
      " --disable-component-update --disable-sync --user-data-dir=" +
      profile + " --enable-logging=stderr --v=0 --dump-dom file://" + html + " >" + out + " 2>" +
      err;
  REQUIRE(std::system(cmd.c_str()) == 0);
  const std::string dom = read_file(out), log = read_file(err);
  INFO(log);
  // Any console message (an uncaught exception among them) fails the test.
  CHECK_THAT(log, !Catch::Contains(":CONSOLE"));
  // The script ran to its end and counted the charts and their bars.
  CHECK_THAT(dom, Catch::Contains("data-charts=\"2\""));
  std::smatch m;
  REQUIRE(std::regex_search(dom, m, std::regex("data-bars=\"([0-9]+)\"")));
  CHECK(std::stoi(m[1]) >= 5);  // three students' quota bars, and usage over time
  CHECK_THAT(dom, Catch::Contains("id=\"quota-chart\""));
  CHECK_THAT(dom, Catch::Contains("id=\"time-chart\""));
  CHECK_THAT(dom, Catch::Contains("alice"));
  CHECK_THAT(dom, Catch::Contains("(stray-vm)"));  // an unassigned VM in the time chart
  CHECK_THAT(dom, Catch::Contains("2h/week"));

  // The quota chart: bob spent his 50 ms a day (red, first, a full-width
  // bar) while alice's 2h/week is barely begun; on one absolute scale his
  // bar would be the sliver.
  const size_t chart = page.find("id=\"quota-chart\"");
  REQUIRE(chart != std::string::npos);
  const std::string quota = page.substr(chart, page.find("</svg>", chart) - chart);
  std::smatch first;
  REQUIRE(std::regex_search(quota, first, std::regex("text-anchor=\"end\">([^<]+)</text>\\s*<rect[^>]*width=\"([0-9.]+)\"[^>]*fill=\"([^\"]+)\"")));
  CHECK(first[1] == "bob");
  CHECK(std::stod(first[2]) == 520.0);
  CHECK(first[3] == "#e15759");
  CHECK(quota.find(">bob<") < quota.find(">alice<"));
}
