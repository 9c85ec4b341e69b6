// libvirt's C API behind small RAII types returning Results: a connection,
// its domains (found by name or by UUID), their state, their persistent XML,
// and the vgpu device added to or removed from their persistent definition,
// or plugged into a running domain.
// Errors come back as one line with libvirt's reason; libvirt prints nothing.
// What libvirt refuses or cannot do is unavailable; a domain it does not know
// is not found; XML that is not a domain's is an invalid argument.
#pragma once

#include <libvirt/libvirt.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/result.h"

namespace vgpu::virt {

struct DomainXml;  // shmem_xml.h

enum class DomainState : uint8_t { kNoState, kRunning, kBlocked, kPaused, kShutdown, kShutoff,
                                   kCrashed, kSuspended };
// "running", "shut off", ... as virsh says them.
std::string_view state_name(DomainState s);
// Whether a QEMU process exists for the domain (it may hold the VM's channel).
bool has_process(DomainState s);

struct DomainInfo {
  std::string name;
  std::string uuid;
  DomainState state = DomainState::kNoState;
  bool persistent = false;
};

// Whether `text` is a UUID as libvirt prints it (then lookups are by UUID).
bool looks_like_uuid(std::string_view text);

class Domain {
 public:
  Domain() = default;
  explicit Domain(virDomainPtr d) : d_(d) {}
  ~Domain();
  Domain(Domain&& o) noexcept : d_(o.d_) { o.d_ = nullptr; }
  Domain& operator=(Domain&& o) noexcept;
  Domain(const Domain&) = delete;
  Domain& operator=(const Domain&) = delete;

  explicit operator bool() const { return d_ != nullptr; }
  virDomainPtr raw() const { return d_; }
  DomainInfo info() const;
  // The persistent definition, secrets included (it may be defined again).
  Result persistent_xml(std::string* out) const;
  // The running domain's XML: the devices its QEMU has now.
  Result live_xml(std::string* out) const;
  // The same, read (parse_domain_xml): the definition's vgpu devices, or the
  // ones the running domain has now.
  Result definition(DomainXml* out) const;
  Result devices_now(DomainXml* out) const;

 private:
  virDomainPtr d_ = nullptr;
};

class Connection {
 public:
  // Opens `uri` (read-write): unavailable if libvirt cannot be reached.
  static Result open(const std::string& uri, std::unique_ptr<Connection>* out);
  explicit Connection(virConnectPtr c) : c_(c) {}  // takes the reference
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  virConnectPtr raw() const { return c_; }
  const std::string& uri() const { return uri_; }
  // A domain by name, or by UUID when `name_or_uuid` is one; not found, with
  // "unknown domain 'X' on URI", when there is none.
  Result find(const std::string& name_or_uuid, Domain* out) const;
  Result list(std::vector<DomainInfo>* out) const;

  // The vgpu device `device` (shmem_xml.h) added to, or the vgpu device named
  // `name` removed from, the domain's persistent definition (the running
  // domain is left as it is). virDomainAttachDeviceFlags/DetachDeviceFlags
  // with VIR_DOMAIN_AFFECT_CONFIG; where a driver lacks them (the test
  // driver), the definition edited with libxml2 and defined again.
  Result add_device(const Domain& d, const std::string& device);
  Result remove_device(const Domain& d, const std::string& name);

  // The vgpu device `device` plugged into the running domain (PCI hot-plug:
  // QEMU connects to the device's server, the guest's module probes it).
  Result plug(const Domain& d, const std::string& device);
  // Asks the running domain to let go of the device whose element (as the
  // live XML has it) is `device_element` (PCI hot-unplug). libvirt waits a
  // few seconds for the guest; it may answer before the device is gone: read
  // the live XML to know.
  Result unplug(const Domain& d, const std::string& device_element);

 private:
  Result redefine(const std::string& xml);

  virConnectPtr c_ = nullptr;
  std::string uri_;
};

}  // namespace vgpu::virt
