#include "cubin.h"

#include <algorithm>
#include <unordered_map>

#include "elf.h"
#include "nv_info.h"

namespace vgpu::fatbin::detail {
namespace {

constexpr uint8_t kStoCudaEntry = 0x10;
constexpr uint8_t kSttCudaObject = 13;
constexpr std::string_view kInfoPrefix = ".nv.info.";

enum class Space { kNone, kGlobal, kConstant };

Space classify(std::string_view section) {
  if (section == ".nv.global" || section == ".nv.global.init") return Space::kGlobal;
  constexpr std::string_view kConst = ".nv.constant";
  if (!section.starts_with(kConst)) return Space::kNone;
  const std::string_view bank = section.substr(kConst.size());
  const bool digits = !bank.empty() && std::all_of(bank.begin(), bank.end(), [](char c) { return c >= '0' && c <= '9'; });
  return digits && bank != "0" ? Space::kConstant : Space::kNone;
}

struct SectionClass {
  Section header;
  Space space = Space::kNone;
};

// What one pass over the sections tells: the ".nv.info.<kernel>" sections by
// kernel name, and the space of every section (by index).
struct Sections {
  std::unordered_map<std::string_view, Section> infos;
  std::vector<SectionClass> classes;
};

Error scan_sections(const ElfView& elf, Sections* out) {
  out->classes.resize(elf.section_count());
  for (uint32_t i = 1; i < elf.section_count(); ++i) {
    Section s;
    std::string_view name;
    if (Error e = elf.section(i, &s); e != Error::kNone) return e;
    if (Error e = elf.section_name(s, &name); e != Error::kNone) return e;
    out->classes[i] = SectionClass{s, classify(name)};
    if (name.starts_with(kInfoPrefix)) out->infos.emplace(name.substr(kInfoPrefix.size()), s);
  }
  return Error::kNone;
}

Error add_kernel(const ElfView& elf, Sections* sections, std::string_view name, ModuleBuilder* out) {
  auto it = sections->infos.find(name);
  if (it == sections->infos.end()) return Error::kNone;
  const Section info_section = it->second;
  sections->infos.erase(it);  // a second symbol of the same name reads nothing more
  Bytes info;
  if (Error e = elf.contents(info_section, &info); e != Error::kNone) return e;
  Kernel k;
  if (Error e = read_kernel_params(info, &k); e != Error::kNone) return e;
  k.name = std::string(name);
  return out->add_kernel(std::move(k));
}

Error add_variable(const ElfView& elf, const SectionClass& in, const Symbol& sym, std::string_view name,
                   ModuleBuilder* out) {
  const Section& s = in.header;
  if (!fits(s.size, sym.value, sym.size)) return Error::kBadElf;
  Variable v;
  v.name = std::string(name);
  v.size = sym.size;
  v.constant = in.space == Space::kConstant;
  v.managed = (sym.other & kStoCudaManaged) != 0;
  if (s.type != kShtNobits) {
    Bytes contents, init;
    if (Error e = elf.contents(s, &contents); e != Error::kNone) return e;
    if (Error e = elf.spend(sym.size); e != Error::kNone) return e;
    slice(contents, sym.value, sym.size, &init);  // fits: checked against s.size above
    if (std::any_of(init.begin(), init.end(), [](uint8_t b) { return b != 0; })) {
      if (Error e = out->charge(init.size()); e != Error::kNone) return e;
      v.init.assign(init.begin(), init.end());
    }
  }
  return out->add_variable(std::move(v), sym.bind == kStbLocal);
}

}  // namespace

Error read_cubin(Bytes image, ModuleBuilder* out) {
  ElfView elf;
  if (Error e = ElfView::open(image, &elf); e != Error::kNone) return e;
  if (Error e = elf.open_symbols(); e != Error::kNone) return e;
  Sections sections;
  if (Error e = scan_sections(elf, &sections); e != Error::kNone) return e;

  for (uint64_t i = 1; i < elf.symbol_count(); ++i) {
    Symbol sym;
    if (Error e = elf.symbol(i, &sym); e != Error::kNone) return e;
    if (sym.type == kSttFunc && sym.shndx == kShnUndef) {  // an external function: printf or assert?
      std::string_view callee;
      if (elf.symbol_name(sym, &callee) == Error::kNone && (callee == "vprintf" || callee == "__assertfail"))
        out->calls_printf();
    }
    const bool kernel = sym.type == kSttFunc && (sym.other & kStoCudaEntry) != 0;
    const bool object = sym.type == kSttObject || sym.type == kSttCudaObject;
    if (sym.shndx == kShnUndef || (!kernel && !object)) continue;
    if (sym.shndx >= sections.classes.size()) return Error::kBadElf;
    const SectionClass& in = sections.classes[sym.shndx];
    if (object && in.space == Space::kNone) continue;  // shared memory, locals, ...
    std::string_view name;
    if (Error e = elf.symbol_name(sym, &name); e != Error::kNone) return e;
    if (name.empty()) continue;
    const Error e = kernel ? add_kernel(elf, &sections, name, out) : add_variable(elf, in, sym, name, out);
    if (e != Error::kNone) return e;
  }
  return Error::kNone;
}

}  // namespace vgpu::fatbin::detail
