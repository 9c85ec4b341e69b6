// The vgpu <shmem> device, built and read with libxml2, and the domain XML
// edited with it: only vgpu's device is added or removed, nothing else moves.
#include <catch2/catch.hpp>

#include "shmem_xml.h"

using namespace vgpu::virt;

namespace {

const char* kDomain = R"(<domain type='kvm'>
  <name>alice-vm</name>
  <uuid>6695eb01-f6a4-8304-79aa-97f2502e193f</uuid>
  <memory unit='KiB'>1048576</memory>
  <devices>
    <disk type='file' device='disk'><source file='/var/lib/x.qcow2'/><target dev='vda'/></disk>
    <shmem name='other'><model type='ivshmem-plain'/><size unit='M'>4</size></shmem>
  </devices>
</domain>)";

}  // namespace

TEST_CASE("the vgpu device is ivshmem-doorbell on vgpud's socket, one vector, no size") {
  const std::string xml = device_xml("alice-vm", "/run/vgpu/vms/alice-vm.sock");
  VgpuDevice d;
  REQUIRE(parse_device_xml(xml, &d).ok());
  CHECK(d.name == "vgpu-alice-vm");
  CHECK(d.vm == "alice-vm");
  CHECK(d.model == "ivshmem-doorbell");
  CHECK(d.server_path == "/run/vgpu/vms/alice-vm.sock");
  CHECK(d.vectors == 1);
  CHECK(xml.find("ioeventfd=\"on\"") != std::string::npos);
  CHECK(xml.find("<size") == std::string::npos);  // libvirt refuses a size with a server
}

TEST_CASE("paths and names are escaped as XML, not spliced") {
  const std::string xml = device_xml("vm", "/tmp/a'b\"<c>&d/vm.sock");
  VgpuDevice d;
  REQUIRE(parse_device_xml(xml, &d).ok());
  CHECK(d.server_path == "/tmp/a'b\"<c>&d/vm.sock");
}

TEST_CASE("a domain's vgpu devices are found; other shmem devices are not vgpu's") {
  DomainXml dom;
  REQUIRE(parse_domain_xml(kDomain, &dom).ok());
  CHECK(dom.name == "alice-vm");
  CHECK(dom.uuid == "6695eb01-f6a4-8304-79aa-97f2502e193f");
  CHECK(dom.devices.empty());

  std::string with;
  REQUIRE(add_device(kDomain, device_xml("alice-vm", "/run/vgpu/vms/alice-vm.sock"), &with).ok());
  REQUIRE(parse_domain_xml(with, &dom).ok());
  REQUIRE(dom.devices.size() == 1);
  CHECK(dom.devices[0].name == "vgpu-alice-vm");
  CHECK(with.find("name=\"other\"") != std::string::npos);  // untouched
  CHECK(with.find("/var/lib/x.qcow2") != std::string::npos);

  std::string without;
  int removed = 0;
  REQUIRE(remove_device(with, "vgpu-alice-vm", &without, &removed).ok());
  CHECK(removed == 1);
  REQUIRE(parse_domain_xml(without, &dom).ok());
  CHECK(dom.devices.empty());
  CHECK(without.find("name=\"other\"") != std::string::npos);
  // Removing what is not there removes nothing, and never another device.
  REQUIRE(remove_device(without, "other", &with, &removed).ok());
  CHECK(removed == 0);
  CHECK(with.find("name=\"other\"") != std::string::npos);
}

TEST_CASE("a domain without <devices> gets one") {
  std::string out;
  REQUIRE(add_device("<domain><name>x</name></domain>", device_xml("x", "/s"), &out).ok());
  DomainXml dom;
  REQUIRE(parse_domain_xml(out, &dom).ok());
  CHECK(dom.devices.size() == 1);
}

TEST_CASE("malformed XML is refused with one line") {
  DomainXml dom;
  VgpuDevice dev;
  std::string out;
  using Code = vgpu::Result::Code;
  const vgpu::Result broken = parse_domain_xml("<domain><name>x</domain>", &dom);
  CHECK(broken.is(Code::kInvalidArgument));
  CHECK_THAT(broken.message(), Catch::StartsWith("cannot parse the XML: "));
  CHECK(broken.message().find('\n') == std::string::npos);
  const vgpu::Result network = parse_domain_xml("<network/>", &dom);
  CHECK(network.is(Code::kInvalidArgument));
  CHECK_THAT(network.message(), Catch::Contains("not a libvirt domain"));
  CHECK(parse_device_xml("<shmem name='other'/>", &dev).is(Code::kInvalidArgument));
  CHECK(add_device(kDomain, "<shmem", &out).is(Code::kInvalidArgument));
  // An external entity is not fetched (XML_PARSE_NONET; no entity expansion).
  CHECK(parse_domain_xml("<!DOCTYPE d [<!ENTITY e SYSTEM 'file:///etc/passwd'>]>"
                         "<domain><name>&e;</name></domain>",
                         &dom)
            .ok());
  CHECK(dom.name.find("root:") == std::string::npos);
}
