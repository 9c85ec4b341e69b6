// The CUDA test programs and the sim plug-in that implements their kernels.
//
// 1. Each program is built as vgpu needs it: NEEDED libcudart.so.13 (except
//    static_runtime, which must not have it), and a fat binary.
// 2. Every kernel in every program (read from the binaries' cubins) has an
//    implementation vgpu_sim_<mangled name> in the plug-in, except
//    not_in_plugin, which must not have one, and class_kernels', thrust_algorithms',
//    async_copies' and tensor_cores' kernels and runtime_features' heap_blocks,
//    which the sim runs from their PTX (a plug-in would hide the interpreter); and the plug-in implements no
//    kernel that no program has (a renamed kernel shows up on both sides).
// 3. The implementations, called directly on host memory with parameter
//    buffers packed as the cubin's .nv.info says, compute what the kernels do.
#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "cuda_elf.h"
#include "struct_param_types.h"
#include "vgpu/sim_kernel.h"

namespace {

const char* const kNotInPlugin = "_Z13not_in_pluginPii";

float fl(int i) { return static_cast<float>(i); }

struct ProgramEntry {
  std::string name, path, runtime;
  cuda_elf::Program binary;
};

const std::vector<ProgramEntry>& programs() {
  static const std::vector<ProgramEntry> list = [] {
    std::vector<ProgramEntry> out;
    std::ifstream in(VGPU_PROGRAMS_MANIFEST);
    if (!in) throw std::runtime_error("cannot read " VGPU_PROGRAMS_MANIFEST);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      ProgramEntry e;
      if (!(fields >> e.name >> e.path >> e.runtime)) continue;
      e.binary = cuda_elf::read_program(e.path);
      out.push_back(std::move(e));
    }
    return out;
  }();
  return list;
}

const ProgramEntry& program(const std::string& name) {
  for (const auto& p : programs())
    if (p.name == name) return p;
  throw std::runtime_error("no program " + name + " in the manifest");
}

std::vector<const cuda_elf::Kernel*> kernels_of(const ProgramEntry& p) {
  std::vector<const cuda_elf::Kernel*> out;
  for (const auto& c : p.binary.cubins)
    for (const auto& k : c.kernels) out.push_back(&k);
  return out;
}

const cuda_elf::Kernel& kernel(const std::string& program_name, const std::string& mangled) {
  for (const auto* k : kernels_of(program(program_name)))
    if (k->name == mangled) return *k;
  throw std::runtime_error("no kernel " + mangled + " in " + program_name);
}

const cuda_elf::Variable* variable(const std::string& program_name, const std::string& name) {
  for (const auto& c : program(program_name).binary.cubins)
    for (const auto& v : c.variables)
      if (v.name == name) return &v;
  return nullptr;
}

void* plugin() {
  static void* handle = [] {
    void* h = dlopen(VGPU_TEST_KERNELS, RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) throw std::runtime_error(std::string("dlopen: ") + dlerror());
    return h;
  }();
  return handle;
}

vgpu_sim_kernel_fn implementation(const std::string& mangled) {
  return reinterpret_cast<vgpu_sim_kernel_fn>(
      dlsym(plugin(), (VGPU_SIM_SYMBOL_PREFIX + mangled).c_str()));
}

// A parameter buffer packed as the cubin says: each argument at its
// parameter's offset, with its size checked against the parameter's.
template <typename... Args>
std::vector<uint8_t> pack(const cuda_elf::Kernel& k, const Args&... args) {
  REQUIRE(k.params.size() == sizeof...(Args));
  std::vector<uint8_t> buf(k.param_bytes, 0xcd);
  size_t i = 0;
  auto put = [&](const void* p, size_t size) {
    INFO(k.name << " parameter " << i);
    REQUIRE(k.params[i].size == size);
    REQUIRE(k.params[i].offset + size <= buf.size());
    std::memcpy(buf.data() + k.params[i].offset, p, size);
    ++i;
  };
  (put(&args, sizeof(Args)), ...);
  return buf;
}

struct Symbols {
  std::map<std::string, void*> table;
  static void* lookup(const vgpu_sim_launch* self, const char* name) {
    auto* s = static_cast<Symbols*>(self->backend);
    auto it = s->table.find(name);
    return it == s->table.end() ? nullptr : it->second;
  }
};

struct Launch {
  vgpu_sim_launch l{};
  std::vector<uint8_t> params;
  Symbols symbols;

  Launch(unsigned gx, unsigned bx, std::vector<uint8_t> p, unsigned gy = 1, unsigned by = 1)
      : params(std::move(p)) {
    l.grid[0] = gx, l.grid[1] = gy, l.grid[2] = 1;
    l.block[0] = bx, l.block[1] = by, l.block[2] = 1;
    l.params = params.data();
    l.params_size = params.size();
    l.modeled_ns = 1000;
    l.symbol_address = &Symbols::lookup;
    l.backend = &symbols;
  }

  int run(const std::string& mangled) {
    vgpu_sim_kernel_fn fn = implementation(mangled);
    REQUIRE(fn != nullptr);
    return fn(&l);
  }
};

}  // namespace

TEST_CASE("programs are built with the shared CUDA runtime", "[programs]") {
  const std::set<std::string> expected = {
      "saxpy",        "vector_add", "streams_events", "struct_param", "constant_memory",
      "error_paths",  "cross_tenant", "device_query", "busy",         "static_runtime",
      "unsupported_call", "alloc",      "pinned_memory",  "managed_memory", "runtime_features",
      "printf_program", "graphs", "assert_program", "textures", "cooperative", "threads",
      "cub_tuning", "many_copies", "clusters", "graph_conditionals", "graph_api",
      "pitched_copies", "class_kernels", "thrust_algorithms", "thrust_mixed_archs", "async_copies",
      "tensor_cores", "dynamic_parallelism", "separate_compilation"};
  std::set<std::string> listed;
  for (const auto& p : programs()) listed.insert(p.name);
  REQUIRE(listed == expected);

  for (const auto& p : programs()) {
    INFO(p.name << " at " << p.path);
    const auto& needed = p.binary.needed;
    bool cudart = std::find(needed.begin(), needed.end(), "libcudart.so.13") != needed.end();
    CHECK(p.binary.has_fatbin);
    if (p.name == "static_runtime") {
      CHECK(p.runtime == "static");
      CHECK_FALSE(cudart);
      for (const auto& n : needed) CHECK(n.find("libcudart") == std::string::npos);
    } else {
      CHECK(p.runtime == "shared");
      CHECK(cudart);
    }
  }
}

TEST_CASE("the plug-in implements every kernel of every program", "[programs]") {
  std::set<std::string> all_kernels;
  for (const auto& p : programs()) {
    for (const auto* k : kernels_of(p)) {
      INFO(p.name << ": kernel " << k->name);
      all_kernels.insert(k->name);
      // Every parameter lies inside the buffer, in order, without overlap.
      uint32_t end = 0;
      for (const auto& param : k->params) {
        CHECK(param.offset >= end);
        end = param.offset + param.size;
      }
      CHECK(end == k->param_bytes);
      if (k->name == kNotInPlugin)
        CHECK(implementation(k->name) == nullptr);
      else if (p.name == "cub_tuning" && k->name.starts_with("_ZN3cub"))
        continue;  // CUB's own: cub_tuning plans with them and never launches them
      else if (p.name == "error_paths" && k->name == "_Z7boundedPi")
        continue;  // launched only past its __launch_bounds__: refused before it could run
      else if (p.name == "class_kernels" || p.name.starts_with("thrust_") || p.name == "async_copies" ||
               p.name == "tensor_cores" || p.name == "dynamic_parallelism" || p.name == "separate_compilation" ||
               (p.name == "runtime_features" && k->name == "_Z11heap_blocksiPi"))
        CHECK(implementation(k->name) == nullptr);  // the sim interprets their PTX
      else
        CHECK(implementation(k->name) != nullptr);
    }
  }
  // device_query, unsupported_call, alloc, many_copies and pitched_copies have no kernel; every
  // other program has at least one.
  for (const auto& p : programs())
    if (p.name != "device_query" && p.name != "unsupported_call" && p.name != "alloc" &&
        p.name != "many_copies" && p.name != "pitched_copies")
      CHECK_FALSE(kernels_of(p).empty());
  CHECK(all_kernels.count(kNotInPlugin) == 1);

  // Nothing implemented that no program launches (a renamed kernel whose old
  // implementation stayed behind). driver_kernels.cu's kernels are in images
  // driver_api loads by path, and nvrtc_program compiles its own at run time:
  // not in a program's fat binary; their integration tests run them.
  const std::set<std::string> loaded_by_driver_api = {"scale_offset", "nvrtc_square_plus"};
  for (const auto& sym : cuda_elf::dynamic_symbols(VGPU_TEST_KERNELS)) {
    if (sym.rfind(VGPU_SIM_SYMBOL_PREFIX, 0) != 0) continue;
    std::string name = sym.substr(std::strlen(VGPU_SIM_SYMBOL_PREFIX));
    INFO("plug-in exports " << sym);
    CHECK(all_kernels.count(name) + loaded_by_driver_api.count(name) == 1);
  }
}

TEST_CASE("constant_memory's variables have the device names the plug-in uses", "[programs]") {
  const auto* coeffs = variable("constant_memory", "coeffs");
  const auto* bias = variable("constant_memory", "_ZN2cm4biasE");
  const auto* table = variable("constant_memory", "table");
  REQUIRE(coeffs != nullptr);
  REQUIRE(bias != nullptr);
  REQUIRE(table != nullptr);
  CHECK(coeffs->size == 16 * sizeof(float));
  CHECK(coeffs->section.rfind(".nv.constant", 0) == 0);
  CHECK(bias->size == sizeof(float));
  CHECK(bias->section == ".nv.global.init");  // has an initializer: 1.5f
  float init = 0;
  REQUIRE(bias->init.size() == sizeof init);
  std::memcpy(&init, bias->init.data(), sizeof init);
  CHECK(init == 1.5f);
  CHECK(table->size == 256 * sizeof(int));
  CHECK(table->section == ".nv.global");
}

TEST_CASE("saxpy and vector_add implementations", "[programs][plugin]") {
  SECTION("saxpy") {
    const int n = 1000;
    std::vector<float> x(n), y(n + 8, -1.0f);
    for (int i = 0; i < n; ++i) x[i] = static_cast<float>(i), y[i] = static_cast<float>(3 * i);
    const float* px = x.data();
    float* py = y.data();
    Launch l(4, 256, pack(kernel("saxpy", "_Z5saxpyfPKfPfi"), 2.0f, px, py, n));
    REQUIRE(l.run("_Z5saxpyfPKfPfi") == 0);
    for (int i = 0; i < n; ++i) REQUIRE(y[i] == 2.0f * fl(i) + 3.0f * fl(i));
    for (int i = n; i < n + 8; ++i) REQUIRE(y[i] == -1.0f);  // bounds check kept
  }
  SECTION("vector_add over blocks, last one partial") {
    const int n = 1000;
    std::vector<float> a(n), b(n), c(n + 24, 0.5f);
    for (int i = 0; i < n; ++i) a[i] = static_cast<float>(i), b[i] = 1000.0f;
    const float *pa = a.data(), *pb = b.data();
    float* pc = c.data();
    Launch l(8, 128, pack(kernel("vector_add", "_Z10vector_addPKfS0_Pfi"), pa, pb, pc, n));
    REQUIRE(l.run("_Z10vector_addPKfS0_Pfi") == 0);
    for (int i = 0; i < n; ++i) REQUIRE(c[i] == fl(i) + 1000.0f);
    for (int i = n; i < n + 24; ++i) REQUIRE(c[i] == 0.5f);
  }
  SECTION("vector_add_2d with 2-D grid and blocks") {
    const int width = 37, height = 21;
    std::vector<float> a(width * height, 1.0f), b(width * height), c(width * height + 64, 0.0f);
    for (int i = 0; i < width * height; ++i) b[i] = static_cast<float>(i);
    const float *pa = a.data(), *pb = b.data();
    float* pc = c.data();
    Launch l(3, 16,
             pack(kernel("vector_add", "_Z13vector_add_2dPKfS0_Pfii"), pa, pb, pc, width, height),
             /*gy=*/2, /*by=*/16);
    REQUIRE(l.run("_Z13vector_add_2dPKfS0_Pfii") == 0);
    for (int i = 0; i < width * height; ++i) REQUIRE(c[i] == fl(i) + 1.0f);
    for (size_t i = width * height; i < c.size(); ++i) REQUIRE(c[i] == 0.0f);
  }
  SECTION("a parameter buffer too short is a launch failure") {
    auto buf = pack(kernel("saxpy", "_Z5saxpyfPKfPfi"), 1.0f, static_cast<const float*>(nullptr),
                    static_cast<float*>(nullptr), 0);
    buf.resize(buf.size() - 1);
    Launch l(1, 1, buf);
    CHECK(l.run("_Z5saxpyfPKfPfi") != 0);
  }
}

TEST_CASE("streams_events, error_paths, cross_tenant, static_runtime implementations",
          "[programs][plugin]") {
  const int n = 300;
  SECTION("scale_add then add_into") {
    std::vector<float> a(n), b(n);
    for (int i = 0; i < n; ++i) a[i] = static_cast<float>(i), b[i] = 1.0f;
    float *pa = a.data(), *pb = b.data();
    Launch s(2, 256, pack(kernel("streams_events", "_Z9scale_addPfffi"), pa, 2.0f, 1.0f, n));
    REQUIRE(s.run("_Z9scale_addPfffi") == 0);
    const float* ca = pa;
    Launch add(2, 256, pack(kernel("streams_events", "_Z8add_intoPKfPfi"), ca, pb, n));
    REQUIRE(add.run("_Z8add_intoPKfPfi") == 0);
    for (int i = 0; i < n; ++i) REQUIRE(a[i] == 2.0f * fl(i) + 1.0f);
    for (int i = 0; i < n; ++i) REQUIRE(b[i] == 2.0f * fl(i) + 2.0f);
  }
  SECTION("fill") {
    std::vector<int> p(n + 4, 0);
    int* pp = p.data();
    Launch l(3, 128, pack(kernel("error_paths", "_Z4fillPiii"), pp, 77, n));
    REQUIRE(l.run("_Z4fillPiii") == 0);
    CHECK(std::count(p.begin(), p.begin() + n, 77) == n);
    CHECK(std::count(p.begin() + n, p.end(), 0) == 4);
  }
  SECTION("steal copies what it is given") {
    std::vector<unsigned long long> src(n), dst(n, 0);
    for (int i = 0; i < n; ++i) src[i] = 0xabcdef0000000000ull + i;
    const unsigned long long* ps = src.data();
    unsigned long long* pd = dst.data();
    Launch l(2, 256, pack(kernel("cross_tenant", "_Z5stealPKyPyy"), ps, pd,
                          static_cast<unsigned long long>(n)));
    REQUIRE(l.run("_Z5stealPKyPyy") == 0);
    CHECK(dst == src);
  }
  SECTION("square") {
    std::vector<int> p(n);
    for (int i = 0; i < n; ++i) p[i] = i - 100;
    int* pp = p.data();
    Launch l(3, 100, pack(kernel("static_runtime", "_Z6squarePii"), pp, n));
    REQUIRE(l.run("_Z6squarePii") == 0);
    for (int i = 0; i < n; ++i) REQUIRE(p[i] == (i - 100) * (i - 100));
  }
}

TEST_CASE("busy: spin sets the modeled duration", "[programs][plugin]") {
  const unsigned long long ns = 2'500'000;
  Launch l(1, 1, pack(kernel("busy", "_Z4spiny"), ns));
  REQUIRE(l.run("_Z4spiny") == 0);
  CHECK(l.l.modeled_ns == ns);
}

TEST_CASE("struct_param implementations read structs by value", "[programs][plugin]") {
  using vt_struct::Big;
  using vt_struct::Padded;
  using vt_struct::WithArray;

  SECTION("take_padded: char, padded struct, int, pointers") {
    const auto& k = kernel("struct_param", "_Z11take_paddedcN9vt_struct6PaddedEiPS0_Pii");
    REQUIRE(k.params.size() == 6);
    CHECK(k.params[1].offset == 8);    // after the char, at the struct's alignment
    CHECK(k.params[1].size == sizeof(Padded));
    CHECK(k.param_bytes == 68);
    Padded p{};
    p.c = 'A', p.d = 3.25, p.i = -123456, p.v = {1.5f, -2.0f, 1024.0f};
    const int n = 6;
    std::vector<Padded> out(n + 2);
    std::vector<int> extras(2 * (n + 2), 0);
    std::memset(out.data(), 0, out.size() * sizeof(Padded));
    Padded* po = out.data();
    int* pe = extras.data();
    Launch l(2, 4, pack(k, 'z', p, 0x5eed, po, pe, n));
    REQUIRE(l.run(k.name) == 0);
    for (int i = 0; i < n; ++i) {
      INFO("thread " << i);
      CHECK(out[i].c == static_cast<char>('A' + i));
      CHECK(out[i].d == 3.25 * (i + 1));
      CHECK(out[i].i == -123456 - i);
      CHECK(out[i].v.x == 1.5f + fl(i));
      CHECK(out[i].v.y == -2.0f);
      CHECK(out[i].v.z == 1024.0f);
      CHECK(extras[2 * i] == 'z');
      CHECK(extras[2 * i + 1] == 0x5eed);
    }
    CHECK(out[n].i == 0);
    CHECK(extras[2 * n] == 0);
  }
  SECTION("take_array: arrays inside a struct") {
    const auto& k = kernel("struct_param", "_Z10take_arrayN9vt_struct9WithArrayEPfPi");
    WithArray w{};
    w.count = -7;
    for (int i = 0; i < 5; ++i) w.values[i] = 0.5f * fl(i);
    w.bytes[0] = 1, w.bytes[1] = 0x80, w.bytes[2] = 0xff;
    std::vector<float> values(5, -1.0f);
    std::vector<int> misc(4, 0);
    float* pv = values.data();
    int* pm = misc.data();
    Launch l(1, 8, pack(k, w, pv, pm));
    REQUIRE(l.run(k.name) == 0);
    for (int i = 0; i < 5; ++i) CHECK(values[i] == 0.5f * fl(i));
    CHECK(misc == std::vector<int>{-7, 1, 0x80, 0xff});
  }
  SECTION("scale_big: a 528-byte struct") {
    const auto& k = kernel("struct_param", "_Z9scale_bigiN9vt_struct3BigEPd");
    REQUIRE(k.params.size() == 3);
    CHECK(k.params[1].size == sizeof(Big));
    Big b{};
    b.count = 100;
    b.scale = 0.5;
    for (int i = 0; i < 128; ++i) b.values[i] = i * i - 50;
    std::vector<double> out(128, 0.0);
    double* po = out.data();
    Launch l(4, 32, pack(k, 3, b, po));
    REQUIRE(l.run(k.name) == 0);
    for (int i = 0; i < 128; ++i) {
      INFO("i = " << i);
      CHECK(out[i] == (i < 100 ? (i * i - 50 + 3) * 0.5 : 0.0));
    }
  }
}

TEST_CASE("constant_memory implementations reach variables by device name", "[programs][plugin]") {
  float coeffs[16];
  for (int i = 0; i < 16; ++i) coeffs[i] = static_cast<float>(i + 1);
  float bias = 1.5f;
  int table[256];
  for (int i = 0; i < 256; ++i) table[i] = 1000 + 7 * i;
  auto add_symbols = [&](Launch& l) {
    l.symbols.table = {{"coeffs", coeffs}, {"_ZN2cm4biasE", &bias}, {"table", table}};
  };

  SECTION("apply_coeffs") {
    const int n = 100;
    std::vector<float> x(n), y(n, 0.0f);
    for (int i = 0; i < n; ++i) x[i] = static_cast<float>(i);
    const float* px = x.data();
    float* py = y.data();
    Launch l(1, 128, pack(kernel("constant_memory", "_Z12apply_coeffsPKfPfi"), px, py, n));
    add_symbols(l);
    REQUIRE(l.run("_Z12apply_coeffsPKfPfi") == 0);
    for (int i = 0; i < n; ++i) REQUIRE(y[i] == coeffs[i % 16] * x[i] + 1.5f);
  }
  SECTION("lookup and scale_table") {
    const int m = 50;
    std::vector<int> idx(m), out(m, 0);
    for (int i = 0; i < m; ++i) idx[i] = (i * 37) % 512;
    const int* pi = idx.data();
    int* po = out.data();
    Launch l(1, 64, pack(kernel("constant_memory", "_Z6lookupPKiPii"), pi, po, m));
    add_symbols(l);
    REQUIRE(l.run("_Z6lookupPKiPii") == 0);
    for (int i = 0; i < m; ++i) REQUIRE(out[i] == 1000 + 7 * (idx[i] & 255));

    Launch s(2, 128, pack(kernel("constant_memory", "_Z11scale_tablei"), 3));
    add_symbols(s);
    REQUIRE(s.run("_Z11scale_tablei") == 0);
    for (int i = 0; i < 256; ++i) REQUIRE(table[i] == 3 * (1000 + 7 * i));
  }
  SECTION("an unknown variable is a launch failure, not a crash") {
    const float* px = nullptr;
    float* py = nullptr;
    Launch l(1, 1, pack(kernel("constant_memory", "_Z12apply_coeffsPKfPfi"), px, py, 1));
    l.symbols.table = {{"coeffs", coeffs}};  // no bias
    CHECK(l.run("_Z12apply_coeffsPKfPfi") != 0);
    Launch s(1, 1, pack(kernel("constant_memory", "_Z11scale_tablei"), 2));
    s.l.symbol_address = nullptr;
    CHECK(s.run("_Z11scale_tablei") != 0);
  }
}
