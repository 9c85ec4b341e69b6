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

// ".nv.info.<kernel>" sections by kernel name.
Error info_sections(const ElfView& elf, std::unordered_map<std::string_view, Section>* out) {
  for (uint32_t i = 1; i < elf.section_count(); ++i) {
    Section s;
    std::string_view name;
    if (Error e = elf.section(i, &s); e != Error::kNone) return e;
    if (Error e = elf.section_name(s, &name); e != Error::kNone) return e;
    if (name.starts_with(kInfoPrefix)) out->emplace(name.substr(kInfoPrefix.size()), s);
  }
  return Error::kNone;
}

Error add_kernel(const ElfView& elf, const std::unordered_map<std::string_view, Section>& infos,
                 std::string_view name, ModuleBuilder* out) {
  auto it = infos.find(name);
  if (it == infos.end()) return Error::kNone;
  Bytes info;
  if (Error e = elf.contents(it->second, &info); e != Error::kNone) return e;
  Kernel k;
  if (Error e = read_kernel_params(info, &k); e != Error::kNone) return e;
  k.name = std::string(name);
  return out->add_kernel(std::move(k));
}

Error add_variable(const ElfView& elf, const Symbol& sym, std::string_view name, ModuleBuilder* out) {
  Section s;
  std::string_view section_name;
  if (Error e = elf.section(sym.shndx, &s); e != Error::kNone) return e;
  if (Error e = elf.section_name(s, &section_name); e != Error::kNone) return e;
  const Space space = classify(section_name);
  if (space == Space::kNone) return Error::kNone;
  if (!fits(s.size, sym.value, sym.size)) return Error::kBadElf;

  Variable v;
  v.name = std::string(name);
  v.size = sym.size;
  v.constant = space == Space::kConstant;
  Bytes contents, init;
  if (Error e = elf.contents(s, &contents); e != Error::kNone) return e;
  if (s.type != kShtNobits && slice(contents, sym.value, sym.size, &init) &&
      std::any_of(init.begin(), init.end(), [](uint8_t b) { return b != 0; })) {
    if (Error e = out->charge(init.size()); e != Error::kNone) return e;
    v.init.assign(init.begin(), init.end());
  }
  return out->add_variable(std::move(v));
}

}  // namespace

Error read_cubin(Bytes image, ModuleBuilder* out) {
  ElfView elf;
  if (Error e = ElfView::open(image, &elf); e != Error::kNone) return e;
  if (Error e = elf.open_symbols(); e != Error::kNone) return e;
  std::unordered_map<std::string_view, Section> infos;
  if (Error e = info_sections(elf, &infos); e != Error::kNone) return e;

  for (uint64_t i = 1; i < elf.symbol_count(); ++i) {
    Symbol sym;
    if (Error e = elf.symbol(i, &sym); e != Error::kNone) return e;
    const bool kernel = sym.type == kSttFunc && (sym.other & kStoCudaEntry) != 0;
    const bool object = sym.type == kSttObject || sym.type == kSttCudaObject;
    if (sym.shndx == kShnUndef || (!kernel && !object)) continue;
    std::string_view name;
    if (Error e = elf.symbol_name(sym, &name); e != Error::kNone) return e;
    const Error e = kernel ? add_kernel(elf, infos, name, out) : add_variable(elf, sym, name, out);
    if (e != Error::kNone) return e;
  }
  return Error::kNone;
}

}  // namespace vgpu::fatbin::detail
