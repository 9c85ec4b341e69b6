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

Status Domain::persistent_xml(std::string* out, std::string* why) const {
  char* xml = virDomainGetXMLDesc(d_, VIR_DOMAIN_XML_INACTIVE | VIR_DOMAIN_XML_SECURE);
  if (!xml) {
    *why = "cannot read the domain's definition: " + last_error();
    return Status::kUnknown;
  }
  *out = xml;
  free(xml);
  return Status::kSuccess;
}

Status Domain::live_xml(std::string* out, std::string* why) const {
  char* xml = virDomainGetXMLDesc(d_, 0);
  if (!xml) {
    *why = "cannot read the running domain's XML: " + last_error();
    return Status::kUnknown;
  }
  *out = xml;
  free(xml);
  return Status::kSuccess;
}

std::unique_ptr<Connection> Connection::open(const std::string& uri, std::string* why) {
  init_libvirt();
  virConnectPtr c = virConnectOpen(uri.c_str());
  if (!c) {
    *why = "cannot reach libvirt at " + uri + ": " + last_error();
    return nullptr;
  }
  auto conn = std::make_unique<Connection>(c);
  conn->uri_ = uri;
  return conn;
}

Connection::~Connection() {
  if (c_) virConnectClose(c_);
}

Status Connection::find(const std::string& name_or_uuid, Domain* out, std::string* why) const {
  virDomainPtr d = looks_like_uuid(name_or_uuid)
                       ? virDomainLookupByUUIDString(c_, name_or_uuid.c_str())
                       : virDomainLookupByName(c_, name_or_uuid.c_str());
  if (!d) {
    if (last_error_code() == VIR_ERR_NO_DOMAIN) {
      *why = "unknown domain '" + name_or_uuid + "' on " + uri_;
      return Status::kInvalidValue;
    }
    *why = "cannot look up domain '" + name_or_uuid + "': " + last_error();
    return Status::kUnknown;
  }
  *out = Domain(d);
  return Status::kSuccess;
}

Status Connection::list(std::vector<DomainInfo>* out, std::string* why) const {
  virDomainPtr* domains = nullptr;
  const int n = virConnectListAllDomains(c_, &domains, 0);
  if (n < 0) {
    *why = "cannot list the domains on " + uri_ + ": " + last_error();
    return Status::kUnknown;
  }
  out->clear();
  for (int i = 0; i < n; ++i) {
    Domain d(domains[i]);  // frees it
    out->push_back(d.info());
  }
  free(domains);
  return Status::kSuccess;
}

Status Connection::redefine(const std::string& xml, std::string* why) {
  virDomainPtr d = virDomainDefineXMLFlags(c_, xml.c_str(), VIR_DOMAIN_DEFINE_VALIDATE);
  if (!d) {
    *why = "cannot define the changed domain: " + last_error();
    return Status::kUnknown;
  }
  virDomainFree(d);
  return Status::kSuccess;
}

Status Connection::add_device(const Domain& d, const std::string& device, std::string* why) {
  if (virDomainAttachDeviceFlags(d.raw(), device.c_str(), VIR_DOMAIN_AFFECT_CONFIG) == 0)
    return Status::kSuccess;
  if (last_error_code() != VIR_ERR_NO_SUPPORT) {
    *why = "cannot add the vgpu device: " + last_error();
    return Status::kUnknown;
  }
  std::string xml, changed;
  if (Status s = d.persistent_xml(&xml, why); !ok(s)) return s;
  if (!virt::add_device(xml, device, &changed, why)) return Status::kUnknown;
  return redefine(changed, why);
}

Status Connection::remove_device(const Domain& d, const std::string& name, std::string* why) {
  std::string xml;
  if (Status s = d.persistent_xml(&xml, why); !ok(s)) return s;
  DomainXml parsed;
  if (!parse_domain_xml(xml, &parsed, why)) return Status::kUnknown;
  for (const VgpuDevice& dev : parsed.devices) {
    if (dev.name != name) continue;
    // The element exactly as libvirt keeps it, so it matches only this device.
    if (virDomainDetachDeviceFlags(d.raw(), dev.xml.c_str(), VIR_DOMAIN_AFFECT_CONFIG) == 0)
      continue;
    if (last_error_code() != VIR_ERR_NO_SUPPORT) {
      *why = "cannot remove the vgpu device: " + last_error();
      return Status::kUnknown;
    }
    std::string changed;
    int removed = 0;
    if (!virt::remove_device(xml, name, &changed, &removed, why)) return Status::kUnknown;
    return redefine(changed, why);
  }
  return Status::kSuccess;
}

Status Connection::plug(const Domain& d, const std::string& device, std::string* why) {
  if (virDomainAttachDeviceFlags(d.raw(), device.c_str(), VIR_DOMAIN_AFFECT_LIVE) == 0)
    return Status::kSuccess;
  *why = "cannot plug the vgpu device into the running domain: " + last_error();
  return Status::kUnknown;
}

Status Connection::unplug(const Domain& d, const std::string& device_element,
                          std::string* why) {
  if (virDomainDetachDeviceFlags(d.raw(), device_element.c_str(), VIR_DOMAIN_AFFECT_LIVE) == 0)
    return Status::kSuccess;
  *why = "cannot unplug the vgpu device from the running domain: " + last_error();
  return Status::kUnknown;
}

}  // namespace vgpu::virt
