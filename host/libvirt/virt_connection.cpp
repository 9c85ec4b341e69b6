#include "virt_connection.h"

#include <libvirt/virterror.h>

#include <cctype>

#include "shmem_xml.h"
#include "virt_error.h"

namespace vgpu::virt {
namespace {

DomainState state_of(int s) {
  switch (s) {
    case VIR_DOMAIN_RUNNING: return DomainState::kRunning;
    case VIR_DOMAIN_BLOCKED: return DomainState::kBlocked;
    case VIR_DOMAIN_PAUSED: return DomainState::kPaused;
    case VIR_DOMAIN_SHUTDOWN: return DomainState::kShutdown;
    case VIR_DOMAIN_SHUTOFF: return DomainState::kShutoff;
    case VIR_DOMAIN_CRASHED: return DomainState::kCrashed;
    case VIR_DOMAIN_PMSUSPENDED: return DomainState::kSuspended;
    default: return DomainState::kNoState;
  }
}

}  // namespace

std::string_view state_name(DomainState s) {
  switch (s) {
    case DomainState::kRunning: return "running";
    case DomainState::kBlocked: return "idle";
    case DomainState::kPaused: return "paused";
    case DomainState::kShutdown: return "in shutdown";
    case DomainState::kShutoff: return "shut off";
    case DomainState::kCrashed: return "crashed";
    case DomainState::kSuspended: return "pmsuspended";
    case DomainState::kNoState: break;
  }
  return "no state";
}

bool has_process(DomainState s) {
  return s != DomainState::kShutoff && s != DomainState::kNoState && s != DomainState::kCrashed;
}

bool looks_like_uuid(std::string_view t) {
  if (t.size() != 36) return false;
  for (size_t i = 0; i < t.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash != (t[i] == '-')) return false;
    if (!dash && !std::isxdigit(static_cast<unsigned char>(t[i]))) return false;
  }
  return true;
}

Domain::~Domain() {
  if (d_) virDomainFree(d_);
}

Domain& Domain::operator=(Domain&& o) noexcept {
  if (this != &o) {
    if (d_) virDomainFree(d_);
    d_ = o.d_;
    o.d_ = nullptr;
  }
  return *this;
}

DomainInfo Domain::info() const {
  DomainInfo out;
  if (!d_) return out;
  const char* name = virDomainGetName(d_);
  out.name = name ? name : "";
  char uuid[VIR_UUID_STRING_BUFLEN] = {};
  if (virDomainGetUUIDString(d_, uuid) == 0) out.uuid = uuid;
  int state = 0, reason = 0;
  if (virDomainGetState(d_, &state, &reason, 0) == 0) out.state = state_of(state);
  out.persistent = virDomainIsPersistent(d_) == 1;
  return out;
}

Result Domain::persistent_xml(std::string* out) const {
  char* xml = virDomainGetXMLDesc(d_, VIR_DOMAIN_XML_INACTIVE | VIR_DOMAIN_XML_SECURE);
  if (!xml) return Result::unavailable("cannot read the domain's definition: " + last_error());
  *out = xml;
  free(xml);
  return {};
}

Result Domain::live_xml(std::string* out) const {
  char* xml = virDomainGetXMLDesc(d_, 0);
  if (!xml) return Result::unavailable("cannot read the running domain's XML: " + last_error());
  *out = xml;
  free(xml);
  return {};
}

Result Domain::definition(DomainXml* out) const {
  std::string xml;
  if (Result r = persistent_xml(&xml); !r.ok()) return r;
  return parse_domain_xml(xml, out);
}

Result Domain::devices_now(DomainXml* out) const {
  std::string xml;
  if (Result r = live_xml(&xml); !r.ok()) return r;
  return parse_domain_xml(xml, out);
}

Result Connection::open(const std::string& uri, std::unique_ptr<Connection>* out) {
  init_libvirt();
  virConnectPtr c = virConnectOpen(uri.c_str());
  if (!c) return Result::unavailable("cannot reach libvirt at " + uri + ": " + last_error());
  auto conn = std::make_unique<Connection>(c);
  conn->uri_ = uri;
  *out = std::move(conn);
  return {};
}

Connection::~Connection() {
  if (c_) virConnectClose(c_);
}

Result Connection::find(const std::string& name_or_uuid, Domain* out) const {
  virDomainPtr d = looks_like_uuid(name_or_uuid)
                       ? virDomainLookupByUUIDString(c_, name_or_uuid.c_str())
                       : virDomainLookupByName(c_, name_or_uuid.c_str());
  if (!d) {
    if (last_error_code() == VIR_ERR_NO_DOMAIN)
      return Result::not_found("unknown domain '" + name_or_uuid + "' on " + uri_);
    return Result::unavailable("cannot look up domain '" + name_or_uuid + "': " + last_error());
  }
  *out = Domain(d);
  return {};
}

Result Connection::list(std::vector<DomainInfo>* out) const {
  virDomainPtr* domains = nullptr;
  const int n = virConnectListAllDomains(c_, &domains, 0);
  if (n < 0) return Result::unavailable("cannot list the domains on " + uri_ + ": " + last_error());
  out->clear();
  for (int i = 0; i < n; ++i) {
    Domain d(domains[i]);  // frees it
    out->push_back(d.info());
  }
  free(domains);
  return {};
}

Result Connection::redefine(const std::string& xml) {
  virDomainPtr d = virDomainDefineXMLFlags(c_, xml.c_str(), VIR_DOMAIN_DEFINE_VALIDATE);
  if (!d) return Result::unavailable("cannot define the changed domain: " + last_error());
  virDomainFree(d);
  return {};
}

Result Connection::add_device(const Domain& d, const std::string& device) {
  if (virDomainAttachDeviceFlags(d.raw(), device.c_str(), VIR_DOMAIN_AFFECT_CONFIG) == 0) return {};
  if (last_error_code() != VIR_ERR_NO_SUPPORT)
    return Result::unavailable("cannot add the vgpu device: " + last_error());
  std::string xml, changed;
  if (Result r = d.persistent_xml(&xml); !r.ok()) return r;
  if (Result r = virt::add_device(xml, device, &changed); !r.ok()) return r;
  return redefine(changed);
}

Result Connection::remove_device(const Domain& d, const std::string& name) {
  std::string xml;
  if (Result r = d.persistent_xml(&xml); !r.ok()) return r;
  DomainXml parsed;
  if (Result r = parse_domain_xml(xml, &parsed); !r.ok()) return r;
  for (const VgpuDevice& dev : parsed.devices) {
    if (dev.name != name) continue;
    // The element exactly as libvirt keeps it, so it matches only this device.
    if (virDomainDetachDeviceFlags(d.raw(), dev.xml.c_str(), VIR_DOMAIN_AFFECT_CONFIG) == 0)
      continue;
    if (last_error_code() != VIR_ERR_NO_SUPPORT)
      return Result::unavailable("cannot remove the vgpu device: " + last_error());
    std::string changed;
    int removed = 0;
    if (Result r = virt::remove_device(xml, name, &changed, &removed); !r.ok()) return r;
    return redefine(changed);
  }
  return {};
}

Result Connection::plug(const Domain& d, const std::string& device) {
  if (virDomainAttachDeviceFlags(d.raw(), device.c_str(), VIR_DOMAIN_AFFECT_LIVE) == 0) return {};
  return Result::unavailable("cannot plug the vgpu device into the running domain: " +
                             last_error());
}

Result Connection::unplug(const Domain& d, const std::string& device_element) {
  if (virDomainDetachDeviceFlags(d.raw(), device_element.c_str(), VIR_DOMAIN_AFFECT_LIVE) == 0)
    return {};
  return Result::unavailable("cannot unplug the vgpu device from the running domain: " +
                             last_error());
}

}  // namespace vgpu::virt
