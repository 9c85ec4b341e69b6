#include "shmem_xml.h"

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>

#include <memory>

namespace vgpu::virt {
namespace {

struct DocFree {
  void operator()(xmlDoc* d) const { xmlFreeDoc(d); }
};
using Doc = std::unique_ptr<xmlDoc, DocFree>;

const xmlChar* x(const char* s) { return reinterpret_cast<const xmlChar*>(s); }

bool is(const xmlNode* n, const char* name) {
  return n && n->type == XML_ELEMENT_NODE && xmlStrcmp(n->name, x(name)) == 0;
}

xmlNode* child(xmlNode* parent, const char* name) {
  for (xmlNode* c = parent ? parent->children : nullptr; c; c = c->next) {
    if (is(c, name)) return c;
  }
  return nullptr;
}

std::string attr(const xmlNode* n, const char* name) {
  if (!n) return "";
  xmlChar* v = xmlGetProp(n, x(name));
  std::string out = v ? reinterpret_cast<const char*>(v) : "";
  xmlFree(v);
  return out;
}

std::string text(xmlNode* n) {
  if (!n) return "";
  xmlChar* v = xmlNodeGetContent(n);
  std::string out = v ? reinterpret_cast<const char*>(v) : "";
  xmlFree(v);
  return out;
}

Doc parse(std::string_view xml, std::string* why) {
  if (xml.size() > (1u << 26)) {
    *why = "the XML is too large";
    return nullptr;
  }
  xmlResetLastError();
  Doc doc(xmlReadMemory(xml.data(), static_cast<int>(xml.size()), "domain.xml", nullptr,
                        XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING));
  if (!doc) {
    const xmlError* e = xmlGetLastError();
    std::string msg = e && e->message ? e->message : "not well-formed";
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    *why = "cannot parse the XML: " + msg;
  }
  return doc;
}

std::string dump(xmlDoc* doc, xmlNode* node) {
  xmlBuffer* buf = xmlBufferCreate();
  xmlNodeDump(buf, doc, node, 0, 0);
  std::string out(reinterpret_cast<const char*>(xmlBufferContent(buf)),
                  static_cast<size_t>(xmlBufferLength(buf)));
  xmlBufferFree(buf);
  return out;
}

std::string dump_doc(xmlDoc* doc) {
  xmlChar* mem = nullptr;
  int size = 0;
  xmlDocDumpMemory(doc, &mem, &size);
  std::string out(reinterpret_cast<const char*>(mem), static_cast<size_t>(size));
  xmlFree(mem);
  return out;
}

bool ours(const xmlNode* n) { return is(n, "shmem") && attr(n, "name").starts_with(kDevicePrefix); }

void read_device(xmlDoc* doc, xmlNode* n, VgpuDevice* d) {
  d->name = attr(n, "name");
  d->vm = d->name.substr(std::min(d->name.size(), kDevicePrefix.size()));
  d->model = attr(child(n, "model"), "type");
  d->server_path = attr(child(n, "server"), "path");
  const std::string vectors = attr(child(n, "msi"), "vectors");
  d->vectors = 0;
  for (char c : vectors) {
    if (c < '0' || c > '9' || d->vectors > 100000) {
      d->vectors = -1;
      break;
    }
    d->vectors = d->vectors * 10 + (c - '0');
  }
  d->xml = dump(doc, n);
}

}  // namespace

std::string device_xml(const std::string& vm, const std::string& server_path) {
  Doc doc(xmlNewDoc(x("1.0")));
  xmlNode* shmem = xmlNewNode(nullptr, x("shmem"));
  xmlDocSetRootElement(doc.get(), shmem);
  xmlNewProp(shmem, x("name"), x((std::string(kDevicePrefix) + vm).c_str()));
  xmlNewProp(xmlNewChild(shmem, nullptr, x("model"), nullptr), x("type"), x("ivshmem-doorbell"));
  xmlNewProp(xmlNewChild(shmem, nullptr, x("server"), nullptr), x("path"), x(server_path.c_str()));
  xmlNode* msi = xmlNewChild(shmem, nullptr, x("msi"), nullptr);
  xmlNewProp(msi, x("vectors"), x(std::to_string(kMsiVectors).c_str()));
  xmlNewProp(msi, x("ioeventfd"), x("on"));
  return dump(doc.get(), shmem);
}

Result parse_domain_xml(std::string_view xml, DomainXml* out) {
  std::string why;
  Doc doc = parse(xml, &why);
  if (!doc) return Result::invalid_argument(why);
  xmlNode* root = xmlDocGetRootElement(doc.get());
  if (!is(root, "domain")) {
    return Result::invalid_argument("not a libvirt domain's XML (no <domain>)");
  }
  *out = {};
  out->name = text(child(root, "name"));
  out->uuid = text(child(root, "uuid"));
  for (xmlNode* n = child(root, "devices") ? child(root, "devices")->children : nullptr; n;
       n = n->next) {
    if (!ours(n)) continue;
    VgpuDevice d;
    read_device(doc.get(), n, &d);
    out->devices.push_back(std::move(d));
  }
  return {};
}

Result parse_device_xml(std::string_view xml, VgpuDevice* out) {
  std::string why;
  Doc doc = parse(xml, &why);
  if (!doc) return Result::invalid_argument(why);
  xmlNode* root = xmlDocGetRootElement(doc.get());
  if (!ours(root)) {
    return Result::invalid_argument("not a vgpu device (<shmem name='vgpu-...'>)");
  }
  read_device(doc.get(), root, out);
  return {};
}

Result add_device(std::string_view domain_xml, std::string_view device, std::string* out) {
  std::string why;
  Doc doc = parse(domain_xml, &why);
  Doc dev = doc ? parse(device, &why) : nullptr;
  if (!dev) return Result::invalid_argument(why);
  xmlNode* root = xmlDocGetRootElement(doc.get());
  if (!is(root, "domain")) {
    return Result::invalid_argument("not a libvirt domain's XML (no <domain>)");
  }
  xmlNode* devices = child(root, "devices");
  if (!devices) devices = xmlNewChild(root, nullptr, x("devices"), nullptr);
  xmlAddChild(devices, xmlDocCopyNode(xmlDocGetRootElement(dev.get()), doc.get(), 1));
  *out = dump_doc(doc.get());
  return {};
}

Result remove_device(std::string_view domain_xml, std::string_view name, std::string* out,
                     int* removed) {
  std::string why;
  Doc doc = parse(domain_xml, &why);
  if (!doc) return Result::invalid_argument(why);
  xmlNode* root = xmlDocGetRootElement(doc.get());
  if (!is(root, "domain")) {
    return Result::invalid_argument("not a libvirt domain's XML (no <domain>)");
  }
  *removed = 0;
  xmlNode* devices = child(root, "devices");
  for (xmlNode* n = devices ? devices->children : nullptr; n;) {
    xmlNode* next = n->next;
    if (ours(n) && attr(n, "name") == name) {
      xmlUnlinkNode(n);
      xmlFreeNode(n);
      ++*removed;
    }
    n = next;
  }
  *out = dump_doc(doc.get());
  return {};
}

}  // namespace vgpu::virt
