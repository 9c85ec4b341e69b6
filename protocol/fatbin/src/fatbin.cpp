// parse(): the container's entries, each image decompressed in turn, cubins
// before PTX, into one Module. Also the small public helpers.
#include "vgpu/fatbin/fatbin.h"

#include <algorithm>
#include <new>
#include <stdexcept>

#include "container.h"
#include "cubin.h"
#include "decompress.h"
#include "ptx.h"

namespace vgpu::fatbin {

std::string_view error_name(Error e) {
  switch (e) {
    case Error::kNone: return "none";
    case Error::kTruncated: return "truncated";
    case Error::kBadMagic: return "bad magic";
    case Error::kBadVersion: return "bad version";
    case Error::kBadEntry: return "bad entry";
    case Error::kDecompress: return "decompression failed";
    case Error::kTooLarge: return "too large";
    case Error::kBadElf: return "bad ELF";
    case Error::kBadPtx: return "bad PTX";
    case Error::kNoKernelMetadata: return "no kernel metadata";
    case Error::kConflict: return "conflicting images";
  }
  return "unknown error";
}

namespace {

template <typename T>
const T* find_named(const std::vector<T>& items, const NameIndex& index, std::string_view name) {
  if (!index.empty()) {
    auto it = index.find(name);
    return it == index.end() || it->second >= items.size() ? nullptr : &items[it->second];
  }
  for (const T& item : items) {
    if (item.name == name) return &item;
  }
  return nullptr;
}

// An index's nodes (each with its own copy of the name) and bucket array.
uint64_t index_bytes(const NameIndex& index) {
  uint64_t n = index.bucket_count() * sizeof(void*);
  for (const auto& [name, at] : index) n += sizeof(NameIndex::value_type) + 2 * sizeof(void*) + name.capacity();
  return n;
}

}  // namespace

const Kernel* Module::find_kernel(std::string_view name) const {
  return find_named(kernels, kernel_index, name);
}

const Variable* Module::find_variable(std::string_view name) const {
  return find_named(variables, variable_index, name);
}

bool choose_image(const Module& m, uint32_t cc, ImageChoice* out) {
  // Ascending: the last that fits is the best.
  for (auto it = m.cubin_archs.rbegin(); it != m.cubin_archs.rend(); ++it) {
    if (*it / 10 == cc / 10 && *it <= cc) {
      *out = {*it, *it};
      return true;
    }
  }
  for (auto it = m.ptx_archs.rbegin(); it != m.ptx_archs.rend(); ++it) {
    if (*it <= cc) {
      *out = {*it, cc};
      return true;
    }
  }
  return false;
}

uint64_t host_bytes(const Module& m) {
  uint64_t n = sizeof(Module) + m.kernels.capacity() * sizeof(Kernel) +
               m.variables.capacity() * sizeof(Variable);
  for (const Kernel& k : m.kernels) n += k.name.capacity() + k.params.capacity() * sizeof(Param);
  for (const Variable& v : m.variables) n += v.name.capacity() + v.init.capacity();
  n += (m.cubin_archs.capacity() + m.ptx_archs.capacity()) * sizeof(uint32_t);
  return n + index_bytes(m.kernel_index) + index_bytes(m.variable_index);
}

namespace {

// Reads every image of one kind (their sizes were checked against the limit).
Error read_images(const std::vector<detail::Entry>& entries, uint16_t kind, detail::ModuleBuilder* b,
                  bool* found) {
  for (const detail::Entry& e : entries) {
    if (e.kind != kind) continue;
    detail::Image image;
    if (Error err = detail::entry_image(e, &image); err != Error::kNone) return err;
    b->reading_ptx(kind == detail::kKindPtx ? std::max<uint32_t>(e.arch, 1) : 0);
    const Error err = kind == detail::kKindElf ? detail::read_cubin(image.bytes, b)
                                               : detail::read_ptx(image.bytes, b);
    if (err != Error::kNone) return err;
    b->add_arch(kind == detail::kKindElf, e.arch);
    *found = true;
  }
  return Error::kNone;
}

Error parse_unguarded(std::span<const uint8_t> bytes, Module* out, const Limits& limits) {
  std::vector<detail::Entry> entries;
  if (Error e = detail::read_entries(bytes, &entries); e != Error::kNone) return e;
  // All announced sizes first (a small input could announce many highly
  // compressed entries): nothing is decompressed for a fat binary that would
  // go over the limit at its last entry.
  const uint64_t limit = std::min(limits.max_total_image_bytes, kMaxTotalImageBytes);
  uint64_t announced = 0;
  for (const detail::Entry& e : entries) {
    if (e.kind != detail::kKindElf && e.kind != detail::kKindPtx) continue;
    const uint64_t size = e.decompressed_size != 0 ? e.decompressed_size : e.payload.size();
    if (size > limit - announced) return Error::kTooLarge;
    announced += size;
  }
  detail::ModuleBuilder builder;
  bool found = false;
  for (uint16_t kind : {detail::kKindElf, detail::kKindPtx}) {  // cubins first
    if (Error e = read_images(entries, kind, &builder, &found); e != Error::kNone) {
      return e;
    }
  }
  if (!found) return Error::kNoKernelMetadata;
  *out = builder.take();
  return Error::kNone;
}

}  // namespace

Error parse(std::span<const uint8_t> bytes, Module* out, const Limits& limits) {
  if (out == nullptr) return Error::kBadEntry;
  try {
    return parse_unguarded(bytes, out, limits);
  } catch (const std::bad_alloc&) {  // every size is bounded, but memory may still run out
    return Error::kTooLarge;
  } catch (const std::length_error&) {
    return Error::kTooLarge;
  }
}

}  // namespace vgpu::fatbin
