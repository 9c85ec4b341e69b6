// The interpreter's specialized forms of common instructions (ptx_fast.cpp, ptx_fast.h) against
// its general path: one kernel runs every form on inputs chosen to stress them (sign and zero
// extension of 32-bit registers, shifts of the width and more, NaNs and infinities, unsigned
// comparisons of signed types), once as parsed and once with every form switched off; each
// result register, all 64 bits of it, must be the same. And a fault inside a form reports what
// the general path reports.
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "ptx/ptx_fast.h"
#include "ptx_test_support.h"

using namespace vgpu::executor::sim::ptx;
using namespace vgpu::executor::sim::ptx::test;

namespace {

// Results each thread stores, at most.
constexpr size_t kSlots = 1024;

// Each line's result registers are stored after it (predicates as 0/1).
struct Line {
  std::string code;
  std::vector<std::string> results;
};

std::vector<Line> lines() {
  std::vector<Line> v;
  auto add = [&](std::string code, std::vector<std::string> results) { v.push_back({std::move(code), std::move(results)}); };
  for (const char* op : {"add", "sub", "mul.lo"}) {
    for (const char* ty : {"s32", "u32"}) {
      add(std::string(op) + "." + ty + " %r10, %r2, %r3", {"%r10"});
      add(std::string(op) + "." + ty + " %r10, %r3, -7", {"%r10"});
      add(std::string(op) + "." + ty + " %r10, %r2, 4000000000", {"%r10"});
    }
    add(std::string(op) + ".s64 %rd20, %rd5, %rd6", {"%rd20"});
    add(std::string(op) + ".s64 %rd20, %rd5, -123456789", {"%rd20"});
  }
  add("mad.lo.s32 %r10, %r2, %r3, %r2", {"%r10"});
  add("mad.lo.u32 %r10, %r3, %r3, %r2", {"%r10"});
  add("mul.wide.s32 %rd20, %r2, %r3", {"%rd20"});
  add("mul.wide.s32 %rd20, %r3, -3", {"%rd20"});
  add("mul.wide.u32 %rd20, %r2, %r3", {"%rd20"});
  add("mul.wide.u32 %rd20, %r3, 5", {"%rd20"});
  for (const char* src : {"%r2", "%r3"}) {
    const std::string s = src;
    add("shl.b32 %r10, " + s + ", 5", {"%r10"});
    add("shr.u32 %r10, " + s + ", 7", {"%r10"});
    add("shr.s32 %r10, " + s + ", 7", {"%r10"});
    add("shr.b32 %r10, " + s + ", 31", {"%r10"});
    add("shl.b32 %r10, " + s + ", %r4", {"%r10"});  // %r4: 0..63, past the width half the time
    add("shr.u32 %r10, " + s + ", %r4", {"%r10"});
    add("shr.s32 %r10, " + s + ", %r4", {"%r10"});
    add("shl.b32 %r10, " + s + ", 40", {"%r10"});  // an immediate past the width: the general path
  }
  for (const char* op : {"and", "or", "xor"}) {
    add(std::string(op) + ".b32 %r10, %r2, %r3", {"%r10"});
    add(std::string(op) + ".b32 %r10, %r3, 0xf0f0f0f0", {"%r10"});
  }
  add("shl.b64 %rd20, %rd5, 13", {"%rd20"});
  add("and.b64 %rd20, %rd5, 0xff00ff00ff", {"%rd20"});
  add("mov.u32 %r10, %r3", {"%r10"});  // a sign-extended register moved as unsigned
  add("mov.s32 %r10, %r2", {"%r10"});  // a zero-extended one moved as signed
  add("mov.b32 %r10, %f1", {"%r10"});
  add("mov.b64 %rd20, %rd6", {"%rd20"});
  add("mov.u32 %r10, 77", {"%r10"});
  add("mov.s32 %r10, -77", {"%r10"});
  add("mov.u32 %r10, -1", {"%r10"});
  add("mov.u32 %r10, %tid.x", {"%r10"});
  add("mov.u32 %r10, %tid.y", {"%r10"});
  add("mov.u32 %r10, %ntid.x", {"%r10"});
  add("mov.u32 %r10, %ntid.y", {"%r10"});
  add("mov.u32 %r10, %ctaid.x", {"%r10"});
  add("mov.u32 %r10, %ctaid.y", {"%r10"});
  add("mov.pred %p3, %p9", {"%p3"});
  add("cvta.to.global.u64 %rd20, %rd5", {"%rd20"});
  for (const char* cmp : {"eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs"}) {
    const std::string c = cmp;
    add("setp." + c + ".s32 %p1|%p2, %r2, %r3", {"%p1", "%p2"});
    add("setp." + c + ".s32 %p1, %r3, -1", {"%p1"});
    add("setp." + c + ".u32 %p1|%p2, %r2, %r3", {"%p1", "%p2"});
    add("setp." + c + ".u32 %p1, %r3, 7", {"%p1"});
    add("setp." + c + ".s64 %p1|%p2, %rd5, %rd6", {"%p1", "%p2"});
    add("setp." + c + ".s64 %p1, %rd5, -1", {"%p1"});
    add("setp." + c + ".u64 %p1, %rd5, %rd6", {"%p1"});
    add("setp." + c + ".b64 %p1, %rd6, 12345", {"%p1"});
  }
  for (const char* cmp : {"eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"}) {
    const std::string c = cmp;
    add("setp." + c + ".f32 %p1|%p2, %f1, %f2", {"%p1", "%p2"});
    add("setp." + c + ".f32 %p1, %f1, 0f3FC00000", {"%p1"});
  }
  add("setp.lt.and.s32 %p1, %r2, %r3, %p9", {"%p1"});  // combined with a predicate: the general path
  add("and.pred %p3, %p9, %p10", {"%p3"});
  add("or.pred %p3, %p9, %p10", {"%p3"});
  add("xor.pred %p3, %p9, %p10", {"%p3"});
  add("and.pred %p3, !%p9, %p10", {"%p3"});
  for (const char* op : {"add", "sub", "mul"}) {
    add(std::string(op) + ".f32 %f10, %f1, %f2", {"%f10"});
    add(std::string(op) + ".rn.f32 %f10, %f1, 0f3DCCCCCD", {"%f10"});
    add(std::string(op) + ".rz.f32 %f10, %f1, %f2", {"%f10"});  // a rounding modifier: the general path
  }
  add("fma.rn.f32 %f10, %f1, %f2, %f1", {"%f10"});
  add("neg.f32 %f10, %f1", {"%f10"});
  add("abs.f32 %f10, %f2", {"%f10"});
  // f64: both inputs' 64 bits as doubles.
  for (const char* op : {"add", "sub", "mul"}) {
    add(std::string(op) + ".f64 %fd10, %fd1, %fd2", {"%fd10"});
    add(std::string(op) + ".rn.f64 %fd10, %fd2, 0d3FF8000000000000", {"%fd10"});
  }
  add("fma.rn.f64 %fd10, %fd1, %fd2, %fd1", {"%fd10"});
  add("div.rn.f64 %fd10, %fd1, %fd2", {"%fd10"});
  add("neg.f64 %fd10, %fd1", {"%fd10"});  // general
  for (const char* cmp : {"eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"}) {
    const std::string c = cmp;
    add("setp." + c + ".f64 %p1|%p2, %fd1, %fd2", {"%p1", "%p2"});
    add("setp." + c + ".f64 %p1, %fd2, 0dBFF0000000000000", {"%p1"});
  }
  add("cvt.f64.f32 %fd10, %f1", {"%fd10"});
  add("cvt.f64.f32 %fd10, %f2", {"%fd10"});
  add("cvt.rn.f32.f64 %f10, %fd1", {"%f10"});
  add("cvt.rn.f32.f64 %f10, %fd2", {"%f10"});
  add("cvt.rz.f32.f64 %f10, %fd2", {"%f10"});  // another rounding: general
  // Memory: this thread's 16 bytes of shared memory, and a scratch word of global memory.
  add("st.shared.u32 [%r20], %r3", {});
  add("ld.shared.u32 %r10, [%r20]", {"%r10"});
  add("ld.shared.s32 %r10, [%r20]", {"%r10"});
  add("ld.shared.f32 %f10, [%r20]", {"%f10"});
  add("st.shared.u64 [%r20+8], %rd5", {});
  add("ld.shared.u64 %rd20, [%r20+8]", {"%rd20"});
  add("st.global.u32 [%rd7], %r3", {});
  add("ld.global.u32 %r10, [%rd7]", {"%r10"});
  add("ld.global.s32 %r10, [%rd7]", {"%r10"});
  add("ld.s32 %r10, [%rd7]", {"%r10"});  // generic
  add("st.global.u64 [%rd7+8], %rd6", {});
  add("ld.global.u64 %rd20, [%rd7+8]", {"%rd20"});
  add("ld.global.u16 %r10, [%rd7+2]", {"%r10"});  // two bytes: the general path
  add("add.u32 %r10, %r31, %r32", {"%r31", "%r32", "%r10"});  // parameters, zero- and sign-extended
  // Vectors: this thread's 16 bytes of shared memory and of scratch.
  add("st.shared.v2.u32 [%r20], {%r2, %r3}", {});
  add("ld.shared.v2.u32 {%r10, %r11}, [%r20]", {"%r10", "%r11"});
  add("st.shared.v4.b32 [%r20], {%r2, %r3, %r4, %r2}", {});
  add("ld.shared.v4.f32 {%f10, %f11, %f12, %f13}, [%r20]", {"%f10", "%f11", "%f12", "%f13"});
  add("ld.shared.v4.s32 {%r10, %r11, %r12, %r13}, [%r20]", {"%r10", "%r11", "%r12", "%r13"});  // general
  add("st.shared.v2.u64 [%r20], {%rd5, %rd6}", {});
  add("ld.shared.v2.u64 {%rd20, %rd21}, [%r20]", {"%rd20", "%rd21"});
  add("st.global.v4.u32 [%rd7], {%r2, %r3, %r4, %r3}", {});
  add("ld.global.v4.u32 {%r10, %r11, %r12, %r13}, [%rd7]", {"%r10", "%r11", "%r12", "%r13"});
  add("st.global.v2.f32 [%rd7+8], {%f1, %f2}", {});
  add("ld.global.v2.f32 {%f10, %f11}, [%rd7+8]", {"%f10", "%f11"});
  add("st.global.v2.u64 [%rd7], {%rd6, %rd5}", {});
  add("ld.global.v2.u64 {%rd20, %rd21}, [%rd7]", {"%rd20", "%rd21"});
  // Atomic adds on this thread's own words (so the order of threads does not matter).
  add("st.global.v2.u64 [%rd7], {%rd5, %rd6}", {});
  add("atom.global.add.u32 %r10, [%rd7], %r3", {"%r10"});
  add("atom.global.add.s32 %r10, [%rd7+4], -3", {"%r10"});
  add("atom.add.u32 %r10, [%rd7+4], 7", {"%r10"});  // generic
  add("red.global.add.s32 [%rd7], %r2", {});
  add("atom.global.add.u64 %rd20, [%rd7+8], %rd5", {"%rd20"});
  add("red.global.add.u64 [%rd7+8], 99", {});
  add("ld.global.v2.u64 {%rd20, %rd21}, [%rd7]", {"%rd20", "%rd21"});
  add("st.global.v2.f32 [%rd7], {%f1, %f2}", {});
  add("atom.global.add.f32 %f10, [%rd7], %f2", {"%f10"});
  add("red.global.add.f32 [%rd7+4], 0f3FC00000", {});
  add("ld.global.v2.f32 {%f10, %f11}, [%rd7]", {"%f10", "%f11"});
  add("st.shared.v2.u32 [%r20], {%r2, %r3}", {});
  add("atom.shared.add.s32 %r10, [%r20], %r3", {"%r10"});
  add("red.shared.add.u32 [%r20+4], %r2", {});
  add("atom.shared.add.f32 %f10, [%r20+8], %f1", {"%f10"});
  add("ld.shared.v4.u32 {%r10, %r11, %r12, %r13}, [%r20]", {"%r10", "%r11", "%r12", "%r13"});
  add("atom.global.exch.b32 %r10, [%rd7], %r2", {"%r10"});  // not an add: the general path
  add("st.global.u8 [%rd7+3], %r2", {});
  add("ld.global.u8 %r10, [%rd7+3]", {"%r10"});
  add("ld.global.u32 %r10, [%rd7]", {"%r10"});
  // Integer conversions (moves with an extension), and int32 <-> f32.
  add("cvt.s64.s32 %rd20, %r2", {"%rd20"});
  add("cvt.u64.u32 %rd20, %r3", {"%rd20"});
  add("cvt.s64.u32 %rd20, %r3", {"%rd20"});
  add("cvt.u64.s32 %rd20, %r2", {"%rd20"});
  add("cvt.u32.u64 %r10, %rd5", {"%r10"});
  add("cvt.s32.s64 %r10, %rd5", {"%r10"});
  add("cvt.s32.u32 %r10, %r2", {"%r10"});
  add("cvt.s64.u64 %rd20, %rd6", {"%rd20"});
  add("cvt.sat.s32.s64 %r10, %rd5", {"%r10"});  // saturating: the general path
  for (const char* src : {"%r2", "%r3"}) {
    add(std::string("cvt.rn.f32.s32 %f10, ") + src, {"%f10"});
    add(std::string("cvt.rn.f32.u32 %f10, ") + src, {"%f10"});
  }
  for (const char* src : {"%f1", "%f2", "%f10"}) {  // NaNs, infinities, values past int32's range
    add(std::string("cvt.rzi.s32.f32 %r10, ") + src, {"%r10"});
    add(std::string("cvt.rni.s32.f32 %r10, ") + src, {"%r10"});  // general
  }
  add("selp.b32 %r10, %r2, %r3, %p9", {"%r10"});
  add("selp.s32 %r10, %r2, -9, %p10", {"%r10"});
  add("selp.f32 %f10, %f1, 0f3F800000, %p9", {"%f10"});
  add("selp.b64 %rd20, %rd5, %rd6, %p10", {"%rd20"});
  add("selp.u64 %rd20, 5, %rd6, %p9", {"%rd20"});
  for (const char* op : {"min", "max"}) {
    const std::string o = op;
    add(o + ".s32 %r10, %r2, %r3", {"%r10"});
    add(o + ".s32 %r10, %r3, -100", {"%r10"});
    add(o + ".u32 %r10, %r2, %r3", {"%r10"});
    add(o + ".u32 %r10, %r3, 100", {"%r10"});
    add(o + ".f32 %f10, %f1, %f2", {"%f10"});
    add(o + ".f32 %f10, %f2, 0fBF800000", {"%f10"});
  }
  add("div.rn.f32 %f10, %f1, %f2", {"%f10"});
  add("div.approx.f32 %f10, %f2, %f1", {"%f10"});
  add("div.full.f32 %f10, %f1, %f2", {"%f10"});
  add("sqrt.rn.f32 %f10, %f1", {"%f10"});
  add("sqrt.approx.f32 %f10, %f2", {"%f10"});
  add("rsqrt.approx.f32 %f10, %f1", {"%f10"});
  add("rcp.rn.f32 %f10, %f2", {"%f10"});
  add("bar.sync 0", {});  // every thread of the CTA gets here: the values above survive it
  add("barrier.sync 0", {"%r10"});
  return v;
}

std::string kernel_text() {
  std::string s =
      ".version 8.0\n.target sm_80\n.address_size 64\n"
      ".visible .entry forms(.param .u64 in, .param .u64 out, .param .u64 scratch, .param .u32 count,\n"
      "    .param .s32 offset) {\n"
      ".reg .b32 %r<40>;\n.reg .b64 %rd<40>;\n.reg .f32 %f<20>;\n.reg .f64 %fd<20>;\n.reg .pred %p<12>;\n"
      ".shared .align 8 .b8 tile[1024];\n"
      "ld.param.u64 %rd1, [in];\nld.param.u64 %rd2, [out];\nld.param.u64 %rd3, [scratch];\n"
      "ld.param.u32 %r31, [count];\nld.param.s32 %r32, [offset];\n"
      // %r7 the thread's index in its CTA, %r1 in the grid (CTAs of 16x2).
      "mov.u32 %r1, %tid.x;\nmov.u32 %r5, %tid.y;\nshl.b32 %r5, %r5, 4;\nadd.u32 %r7, %r1, %r5;\n"
      "mov.u32 %r6, %ctaid.x;\nshl.b32 %r6, %r6, 5;\nadd.u32 %r1, %r7, %r6;\n"
      "mul.wide.u32 %rd4, %r1, 16;\nadd.s64 %rd4, %rd1, %rd4;\n"
      "ld.global.u64 %rd5, [%rd4];\nld.global.u64 %rd6, [%rd4+8];\n"
      "ld.global.u32 %r2, [%rd4];\n"    // a's low half, zero-extended
      "ld.global.s32 %r3, [%rd4+8];\n"  // b's, sign-extended
      "and.b32 %r4, %r3, 63;\n"
      "mov.b32 %f1, %r2;\nmov.b32 %f2, %r3;\nmov.b64 %fd1, %rd5;\nmov.b64 %fd2, %rd6;\n"
      "setp.ne.s32 %p9, %r4, 0;\nsetp.gt.u32 %p10, %r2, 1000;\n"
      "mov.u32 %r20, tile;\nshl.b32 %r21, %r7, 4;\nadd.u32 %r20, %r20, %r21;\n"
      "mul.wide.u32 %rd7, %r1, 16;\nadd.s64 %rd7, %rd3, %rd7;\n"
      "mul.wide.u32 %rd10, %r1, " +
      std::to_string(8 * kSlots) + ";\nadd.s64 %rd10, %rd2, %rd10;\n";  // this thread's results
  for (const Line& l : lines()) {
    s += l.code + ";\n";
    for (const std::string& r : l.results) {
      if (r.rfind("%p", 0) == 0) s += "selp.u64 %rd30, 1, 0, " + r + ";\nst.global.u64 [%rd10], %rd30;\n";
      else s += "st.global.u64 [%rd10], " + r + ";\n";
      s += "add.s64 %rd10, %rd10, 8;\n";
    }
  }
  // A loop: backward branches, a counter and its comparison.
  s += "mov.u32 %r30, 0;\n$L_loop:\nadd.u32 %r30, %r30, 3;\nsetp.lt.u32 %p4, %r30, 100;\n@%p4 bra $L_loop;\n"
       "st.global.u64 [%rd10], %r30;\nret;\n}\n";
  return s;
}

Program without_fast_forms(const Program& p) {
  Program general = p;
  for (Function& f : general.functions)
    for (Instr& in : f.code) in.fast = Fast::kNone;
  return general;
}

// Values that sit on the edges: signs, widths, float specials.
std::vector<uint64_t> inputs(int threads) {
  const uint64_t edges[] = {0,          1,          0x7fffffff, 0x80000000, 0xffffffff, 0xfffffff9, 41,
                            0x7fc00000 /* NaN */,   0x7f800000 /* inf */,   0xff800000, 0x80000000'00000000,
                            0x3fc00000 /* 1.5f */,  0xc0100000 /* -2.25f */, 0x00000001 /* denormal */,
                            0x7f7fffff, 0x12345678'9abcdef0, 0xffffffff'ffffffff, 0x3dcccccd, 32, 33, 63, 64};
  const size_t n = sizeof edges / sizeof edges[0];
  std::vector<uint64_t> v;
  for (int i = 0; i < threads; ++i) {
    v.push_back(edges[i % n] ^ (i % 3 == 0 ? 0xdead0000'00000000ull : 0));
    v.push_back(edges[(i * 7 + 3) % n]);
  }
  return v;
}

// The same bits; for a float register, any NaN equals any NaN: which NaN operand's payload fmaf
// passes on differs between calls of glibc's fmaf itself (and a GPU returns its canonical NaN).
bool same_result(uint64_t a, uint64_t b, const std::string& reg) {
  if (a == b) return true;
  if (reg.rfind("%fd", 0) == 0) {
    double x, y;
    std::memcpy(&x, &a, 8);
    std::memcpy(&y, &b, 8);
    return x != x && y != y;
  }
  if (reg.rfind("%f", 0) != 0) return false;
  float x, y;
  const uint32_t xa = static_cast<uint32_t>(a), yb = static_cast<uint32_t>(b);
  std::memcpy(&x, &xa, 4);
  std::memcpy(&y, &yb, 4);
  return (a >> 32) == (b >> 32) && x != x && y != y;
}

}  // namespace

TEST_CASE("fast forms: every specialized instruction form leaves exactly what the general path leaves") {
  std::string why;
  const auto parsed = parse(kernel_text(), &why);
  INFO(why);
  REQUIRE(parsed);

  // Every form is chosen somewhere in the kernel, so the comparison below covers them all.
  std::set<Fast> chosen;
  for (const Instr& in : parsed->functions[parsed->function_index.at("forms")].code) chosen.insert(in.fast);
  for (int f = static_cast<int>(Fast::kNone) + 1; f < static_cast<int>(Fast::kCount); ++f) {
    INFO("form " << f);
    CHECK(chosen.count(static_cast<Fast>(f)) == 1);
  }

  constexpr uint32_t kThreads = 64;  // two CTAs of 32: ctaid.x and %ntid differ between them
  const std::vector<uint64_t> in = inputs(kThreads);
  auto run_with = [&](const Program& p) {
    std::vector<uint64_t> out(kThreads * kSlots, 0xcdcdcdcd'cdcdcdcd), scratch(kThreads * 2, 0);
    Params params = Params().add(in.data()).add(out.data()).add(scratch.data()).add(uint32_t{0xfffffff0}).add(int32_t{-5});
    Launch l{{2, 1, 1}, {16, 2, 1}, 0, params.bytes.data(), params.bytes.size()};
    REQUIRE_OK(run(p, "forms", l, {}));
    return out;
  };
  const std::vector<uint64_t> fast = run_with(*parsed);
  const std::vector<uint64_t> general = run_with(without_fast_forms(*parsed));
  size_t stored = 0;
  for (const Line& l : lines()) stored += l.results.size();
  REQUIRE(stored + 1 < kSlots);
  for (uint32_t t = 0; t < kThreads; ++t) {
    size_t k = 0;
    for (const Line& l : lines()) {
      for (const std::string& r : l.results) {
        INFO("thread " << t << ": " << l.code << " -> " << r << " (inputs " << std::hex << in[2 * t] << ", " << in[2 * t + 1] << ")");
        REQUIRE(same_result(fast[t * kSlots + k], general[t * kSlots + k], r));
        ++k;
      }
    }
    CHECK(fast[t * kSlots + k] == 102);  // the loop's counter: 3 at a time until it passes 100
    CHECK(general[t * kSlots + k] == 102);
  }
  // A few by hand, so that both paths being wrong the same way would still show.
  const uint64_t a = in[0], b = in[1];
  CHECK(fast[0] == (uint64_t)(int64_t)(int32_t)((uint32_t)a + (uint32_t)b));  // add.s32
}

TEST_CASE("fast forms: bar.sync in a loop, beside bar.red and threads that left, releases as the general path's") {
  // Each round a thread stores, waits, adds its neighbour's value; odd threads then wait at a
  // bar.red.popc (which counts the even ones' bar.sync as waiting too) and add its count, even
  // ones at a barrier.sync. Threads 48 and up leave before the third round's barriers.
  const std::string text =
      ".version 8.0\n.target sm_80\n.address_size 64\n"
      ".visible .entry barrier_loop(.param .u64 out) {\n"
      ".reg .b32 %r<16>;\n.reg .b64 %rd<4>;\n.reg .pred %p<6>;\n.shared .align 4 .b8 s[256];\n"
      "mov.u32 %r1, %tid.x;\nmov.u32 %r2, 0;\nmov.u32 %r3, 0;\nmov.u32 %r4, s;\n"
      "shl.b32 %r5, %r1, 2;\nadd.u32 %r5, %r4, %r5;\n"                                   // &s[tid]
      "add.u32 %r6, %r1, 1;\nand.b32 %r6, %r6, 63;\nshl.b32 %r6, %r6, 2;\nadd.u32 %r6, %r4, %r6;\n"  // &s[tid+1]
      "and.b32 %r7, %r1, 1;\nsetp.eq.u32 %p3, %r7, 1;\nsetp.ge.u32 %p1, %r1, 48;\n"
      "$L_loop:\nsetp.eq.u32 %p2, %r3, 2;\nand.pred %p2, %p2, %p1;\n@%p2 bra $L_end;\n"
      "mul.lo.u32 %r8, %r1, 7;\nadd.u32 %r8, %r8, %r3;\nadd.u32 %r8, %r8, %r2;\nst.shared.u32 [%r5], %r8;\n"
      "bar.sync 0;\nld.shared.u32 %r9, [%r6];\nadd.u32 %r2, %r2, %r9;\n"
      "and.b32 %r10, %r2, 1;\nsetp.eq.u32 %p4, %r10, 1;\n@%p3 bra $L_red;\n"
      "barrier.sync 0;\nbra $L_next;\n"
      "$L_red:\nbar.red.popc.u32 %r11, 0, %p4;\nadd.u32 %r2, %r2, %r11;\n"
      "$L_next:\nadd.u32 %r3, %r3, 1;\nsetp.lt.u32 %p5, %r3, 4;\n@%p5 bra $L_loop;\n"
      "ld.param.u64 %rd1, [out];\nmov.u32 %r12, %ctaid.x;\nshl.b32 %r12, %r12, 6;\nadd.u32 %r12, %r12, %r1;\n"
      "mul.wide.u32 %rd2, %r12, 4;\nadd.s64 %rd2, %rd1, %rd2;\nst.global.u32 [%rd2], %r2;\n"
      "$L_end:\nret;\n}\n";
  std::string why;
  const auto parsed = parse(text, &why);
  INFO(why);
  REQUIRE(parsed);
  int plain = 0;
  for (const Instr& in : parsed->functions[0].code) {
    if (in.op != Op::kBar) continue;
    CHECK(in.fast == (in.mode == Mode::kNone ? Fast::kBarSync : Fast::kNone));
    plain += in.fast == Fast::kBarSync;
  }
  CHECK(plain == 2);
  auto run_with = [&](const Program& p) {
    std::vector<uint32_t> out(128, 0xcdcdcdcd);
    Params params = Params().add(out.data());
    REQUIRE_OK(run(p, "barrier_loop", Launch{{2, 1, 1}, {64, 1, 1}, 0, params.bytes.data(), params.bytes.size()}, {}));
    return out;
  };
  const std::vector<uint32_t> fast = run_with(*parsed);
  CHECK(fast == run_with(without_fast_forms(*parsed)));
  for (uint32_t t = 0; t < 128; ++t) {
    INFO("thread " << t);
    CHECK((fast[t] == 0xcdcdcdcd) == (t % 64 >= 48));  // those that left store nothing
  }
}

TEST_CASE("fast forms: a fault inside a specialized load or store is reported as the general path reports it") {
  const std::string text =
      ".version 8.0\n.target sm_80\n.address_size 64\n"
      ".visible .entry null_load(.param .u64 p) {\n.reg .b32 %r<4>;\n.reg .b64 %rd<4>;\n"
      "mov.u64 %rd1, 0;\nld.global.u32 %r1, [%rd1+16];\nret;\n}\n"
      ".visible .entry shared_past_end(.param .u64 p) {\n.reg .b32 %r<4>;\n.shared .align 4 .b8 s[64];\n"
      "mov.u32 %r1, 64;\nst.shared.u32 [%r1], %r1;\nret;\n}\n"
      ".visible .entry param_past_end(.param .u64 p, .param .u64 q) {\n.reg .b64 %rd<4>;\n"
      "ld.param.u64 %rd1, [q];\nret;\n}\n";
  std::string why;
  const auto parsed = parse(text, &why);
  INFO(why);
  REQUIRE(parsed);
  const Program general = without_fast_forms(*parsed);
  uint64_t unused = 0;
  Params params = Params().add(&unused);
  const Launch l{{1, 1, 1}, {4, 1, 1}, 0, params.bytes.data(), params.bytes.size()};
  for (const char* entry : {"null_load", "shared_past_end", "param_past_end"}) {  // 8 bytes of parameters
    INFO(entry);
    const Result fast = run(*parsed, entry, l, {});
    const Result slow = run(general, entry, l, {});
    CHECK(fast.outcome != Outcome::kOk);
    CHECK(fast.outcome == slow.outcome);
    CHECK(fast.message == slow.message);
  }
  CHECK(run(*parsed, "null_load", l, {}).outcome == Outcome::kIllegalAddress);
}
