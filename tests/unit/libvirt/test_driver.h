// libvirt's test driver (test:///default) for the libvirt tests: a mock
// hypervisor with no daemon. Every connection to test:///default in one
// process shares one state, so a test drives domains on its own connection
// and vgpud's watcher, in the same process, sees the events.
#pragma once

#include <libvirt/libvirt.h>

#include <chrono>
#include <string>
#include <thread>

#include "virt_error.h"
#include "virt_event_loop.h"

namespace vgpu::virt::test {

inline constexpr const char* kTestUri = "test:///default";

template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

// A connection of the test's own (the event loop registered first).
class TestConnection {
 public:
  TestConnection() {
    ensure_event_loop();
    c_ = virConnectOpen(kTestUri);
  }
  ~TestConnection() {
    if (c_) virConnectClose(c_);
  }
  TestConnection(const TestConnection&) = delete;
  TestConnection& operator=(const TestConnection&) = delete;
  virConnectPtr get() const { return c_; }

 private:
  virConnectPtr c_ = nullptr;
};

// A persistent domain defined for one test and undefined after it.
class TestDomain {
 public:
  TestDomain(virConnectPtr c, std::string name, std::string uuid, const std::string& devices = "")
      : name_(std::move(name)), uuid_(std::move(uuid)) {
    const std::string xml = "<domain type='test'><name>" + name_ + "</name><uuid>" + uuid_ +
                            "</uuid><memory>1048576</memory><os><type>hvm</type></os><devices>" +
                            devices + "</devices></domain>";
    d_ = virDomainDefineXML(c, xml.c_str());
  }
  ~TestDomain() {
    if (!d_) return;
    if (virDomainIsActive(d_) == 1) virDomainDestroy(d_);
    virDomainUndefine(d_);
    virDomainFree(d_);
  }
  TestDomain(const TestDomain&) = delete;
  TestDomain& operator=(const TestDomain&) = delete;

  bool defined() const { return d_ != nullptr; }
  const std::string& name() const { return name_; }
  const std::string& uuid() const { return uuid_; }
  bool start() { return virDomainCreate(d_) == 0; }
  bool destroy() { return virDomainDestroy(d_) == 0; }
  bool shutdown() { return virDomainShutdown(d_) == 0; }
  bool suspend() { return virDomainSuspend(d_) == 0; }
  bool resume() { return virDomainResume(d_) == 0; }
  bool undefine() { return virDomainUndefine(d_) == 0; }
  std::string persistent_xml() const {
    char* x = virDomainGetXMLDesc(d_, VIR_DOMAIN_XML_INACTIVE);
    std::string out = x ? x : "";
    free(x);
    return out;
  }

 private:
  std::string name_, uuid_;
  virDomainPtr d_ = nullptr;
};

}  // namespace vgpu::virt::test
