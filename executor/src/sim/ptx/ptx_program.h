// The parsed form of one PTX module: what the interpreter runs instead of the PTX text.
//
// Build (executor/CMakeLists.txt; users include "ptx/ptx_interpreter.h"):
//   add_library(vgpu_sim_ptx STATIC
//     src/sim/ptx/ptx_lex.cpp          # tokens, literals, type and special-register names
//     src/sim/ptx/ptx_opcode.cpp       # dotted opcode -> Op, types, modifiers
//     src/sim/ptx/ptx_parse.cpp        # PTX text -> decoded instructions
//     src/sim/ptx/ptx_interpreter.cpp  # a grid of CTAs, threads, barriers, warps
//     src/sim/ptx/ptx_parallel.cpp     # a grid's CTAs on several host threads
//     src/sim/ptx/ptx_fast.cpp         # the common instruction forms, chosen after parsing
//     src/sim/ptx/ptx_fast_run.cpp     # ... and run as threaded code
//     src/sim/ptx/ptx_ops.cpp          # each instruction's semantics
//     src/sim/ptx/ptx_builtin_calls.cpp # vprintf, assert, malloc/free, the device runtime
//     src/sim/ptx/ptx_texture_ops.cpp  # tex, suld, sust on the backend's texture unit
//     src/sim/ptx/ptx_wmma.cpp         # wmma: a warp's matrix fragments (tensor cores)
//     src/sim/ptx/ptx_convert.cpp      # cvt and setp: conversions and comparisons
//     src/sim/ptx/ptx_printf.cpp)      # device printf's argument buffer, formatted
//   target_include_directories(vgpu_sim_ptx PUBLIC src/sim)
//
// The parser decodes every instruction once into a compact `Instr` (opcode enum, types, operands
// with register numbers, immediates and symbol ids resolved, branch targets as instruction
// indices), so running never looks at text again.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace vgpu::executor::sim::ptx {

enum class Type : uint8_t {
  kNone, kPred, kB8, kU8, kS8, kB16, kU16, kS16, kF16, kB32, kU32, kS32, kF32, kB64, kU64, kS64, kF64,
  kF16x2,  // two halves in 32 bits, computed lane by lane
  kBF16,    // bfloat16: an f32's upper 16 bits
  kBF16x2,  // two of them in 32 bits, computed lane by lane
};
// Bytes of each type; .pred counts as 1. At namespace scope, so that it is one table in memory:
// inside the function the compiler rebuilds it on the stack at every instruction interpreted.
inline constexpr int8_t kTypeSizes[] = {0, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 8, 8, 8, 8, 4, 2, 4};
// Inline: the interpreter asks for every instruction it runs.
inline constexpr int type_size(Type t) { return kTypeSizes[static_cast<uint8_t>(t)]; }
inline constexpr bool type_signed(Type t) {
  return t == Type::kS8 || t == Type::kS16 || t == Type::kS32 || t == Type::kS64;
}
inline constexpr bool type_float(Type t) {
  return t == Type::kF16 || t == Type::kF32 || t == Type::kF64 || t == Type::kBF16;
}
// Two 16-bit floats in 32 bits (f16x2, bf16x2).
inline constexpr bool type_pair(Type t) { return t == Type::kF16x2 || t == Type::kBF16x2; }
static_assert(type_size(Type::kF64) == 8 && type_size(Type::kPred) == 1 && type_size(Type::kF16) == 2 &&
              type_size(Type::kF16x2) == 4 && type_size(Type::kBF16) == 2 && type_size(Type::kBF16x2) == 4);

enum class Space : uint8_t { kGeneric, kGlobal, kShared, kLocal, kConst, kParam };

enum class Op : uint8_t {
  kUnsupported,  // anything the interpreter does not run; Instr::text names it
  kMov, kLd, kSt, kAdd, kSub, kMul, kMad, kMul24, kMad24, kFma, kDiv, kRem, kAbs, kNeg, kMin, kMax,
  kAnd, kOr, kXor, kNot, kCnot, kShl, kShr, kShf, kSelp, kSlct, kSetp, kSet, kCvt, kCvta, kSqrt,
  kRsqrt, kRcp, kEx2, kLg2, kSin, kCos, kTanh, kCopysign, kPopc, kClz, kBrev, kBfe, kBfi, kPrmt,
  kBfind, kLop3, kTestp, kAtom, kRed, kBra, kRet, kExit, kCall, kBar, kNop, kTrap, kShfl, kVote,
  kActivemask, kWarpSync, kTex, kSuld, kSust, kMatch, kRedux, kDp4a, kDp2a,
  kCpAsync,   // cp.async's copy from global to shared memory (its group waits are kNop)
  kMbarrier,  // mbarrier.* and cp.async.mbarrier.arrive; Instr::mode says which
  kWmma,      // wmma.load/store/mma (ptx_wmma.cpp): its shape, layout and types packed in Instr::flags
};

enum class Cmp : uint8_t {
  kNone, kEq, kNe, kLt, kLe, kGt, kGe, kLo, kLs, kHi, kHs, kEqu, kNeu, kLtu, kLeu, kGtu, kGeu, kNum,
  kNan
};
enum class BoolOp : uint8_t { kNone, kAnd, kOr, kXor };
// Sub-operation of atom/red, shfl, vote, testp, shf, tex, mbarrier.
enum class Mode : uint8_t {
  kNone, kAdd, kMin, kMax, kInc, kDec, kExch, kCas, kAnd, kOr, kXor,  // atom/red
  kUp, kDown, kBfly, kIdx,                                            // shfl
  kAll, kAny, kUni, kBallot,                                          // vote
  kFinite, kInfinite, kNumber, kNotANumber, kNormal, kSubnormal,      // testp
  kLeft, kRight,                                                      // shf
  kTex1d, kTex2d, kTex3d, kTexA1d, kTexA2d, kTexCube, kTexACube,      // tex/suld/sust geometry
  kMbInit, kMbArrive, kMbArriveDrop, kMbTestWait, kMbPendingCount,   // mbarrier
  kMbInval, kMbCpAsyncArrive, kMbExpectTx, kMbCompleteTx,
  kMbBulkCopy,  // cp.async.bulk global -> shared, completing on an mbarrier's transaction count
  kWmmaLoadA, kWmmaLoadB, kWmmaLoadC, kWmmaStore, kWmmaMma,          // wmma
};

// Instruction modifier bits.
enum Flag : uint32_t {
  kHi = 1u << 0, kLo = 1u << 1, kWide = 1u << 2, kSat = 1u << 3, kCarryOut = 1u << 4,
  kCarryIn = 1u << 5, kRn = 1u << 6, kRz = 1u << 7, kRm = 1u << 8, kRp = 1u << 9,
  kRni = 1u << 10, kRzi = 1u << 11, kRmi = 1u << 12, kRpi = 1u << 13, kTo = 1u << 14,
  kClamp = 1u << 15, kApprox = 1u << 16, kShiftAmt = 1u << 17,
  kLevel = 1u << 18,         // tex.level: an explicit level of detail
  kBoundaryZero = 1u << 19,  // suld/sust .zero (.clamp is kClamp; neither: .trap)
  kCacheHint = 1u << 20,     // .L2::cache_hint: the last operand is a cache policy
  kIgnoreSrc = 1u << 21,     // cp.async's fourth operand is ignore-src (a predicate), not src-size
  kParity = 1u << 22,        // mbarrier test_wait/try_wait .parity: a phase parity, not a state
  kNoinc = 1u << 23,         // cp.async.mbarrier.arrive.noinc: an arrival the count expected
  kExpectTx = 1u << 24,      // mbarrier.arrive.expect_tx: the last operand is a transaction count
  kToTf32 = 1u << 25,        // cvt.rna.tf32.f32: an f32 rounded (to nearest, ties away) to tf32's 10 mantissa bits
  kVolatile = 1u << 26,      // ld/st .volatile: the other threads of the CTA run before the thread goes on
};

enum class Special : uint8_t {
  kTidX, kTidY, kTidZ, kNtidX, kNtidY, kNtidZ, kCtaidX, kCtaidY, kCtaidZ, kNctaidX, kNctaidY,
  kNctaidZ, kLaneid, kWarpid, kNwarpid, kSmid, kNsmid, kGridid, kClock, kClock64, kGlobaltimer,
  kLanemaskEq, kLanemaskLe, kLanemaskLt, kLanemaskGe, kLanemaskGt, kDynamicSmemSize,
  kEnvreg1, kEnvreg2,  // the grid's workspace (cooperative groups' grid barrier), high and low half
};

struct Operand {
  enum Kind : uint8_t { kNone, kReg, kImm, kSpecial, kSym, kMem, kVec, kSink, kLabel, kFunc };
  Kind kind = kNone;
  bool negate = false;       // `!%p`
  bool int_literal = false;  // kImm written as an integer (converted for float instructions)
  uint8_t mem_base = 0;      // kMem: 0 absolute, 1 register, 2 symbol
  uint32_t id = 0;           // register, symbol, special, function, label or first vector element
  int64_t value = 0;         // immediate bits, address offset, or vector element count
};

// The forms most instructions take (32- and 64-bit integer arithmetic, f32 arithmetic, moves,
// comparisons, loads and stores through a register, branches), chosen once after parsing
// (ptx_fast.cpp): the interpreter runs them without looking at types, operand kinds or
// modifiers again. kNone: the general path. Names: S/U how a 32-bit result is extended into
// its register (signed types sign-extended, others zero-extended); R/I a last operand that is a
// register or an immediate.
#define VGPU_PTX_FAST_FORMS(X)                                                                   \
  X(kNone)                                                                                        \
  X(kAddS32R) X(kAddS32I) X(kAddU32R) X(kAddU32I) X(kSubS32R) X(kSubS32I) X(kSubU32R) X(kSubU32I) \
  X(kMulLoS32R) X(kMulLoS32I) X(kMulLoU32R) X(kMulLoU32I) X(kMadLoS32) X(kMadLoU32)               \
  X(kMulWideS32R) X(kMulWideS32I) X(kMulWideU32R) X(kMulWideU32I)                                 \
  X(kShlU32I) X(kShrU32I) X(kShrS32I) X(kShlU32R) X(kShrU32R) X(kShrS32R)                         \
  X(kAndU32R) X(kAndU32I) X(kOrU32R) X(kOrU32I) X(kXorU32R) X(kXorU32I)                           \
  X(kAdd64R) X(kAdd64I) X(kSub64R) X(kSub64I) X(kMulLo64R) X(kMulLo64I) X(kShl64I) X(kAnd64I)     \
  X(kMov32U) X(kMov32S) X(kMov64) X(kMovI)                                                        \
  X(kMovTidX) X(kMovTidY) X(kMovNtidX) X(kMovNtidY) X(kMovCtaidX) X(kMovCtaidY)                   \
  /* setp with no boolean combination; Instr::fast_arg holds the predicate for each outcome: */  \
  /* bit 0 less, bit 1 equal, bit 2 greater, bit 3 unordered (a NaN). */                         \
  X(kSetpS32R) X(kSetpS32I) X(kSetpU32R) X(kSetpU32I) X(kSetpS64R) X(kSetpS64I)                   \
  X(kSetpU64R) X(kSetpU64I) X(kSetpF32R) X(kSetpF32I)                                             \
  X(kAndPred) X(kOrPred) X(kXorPred)                                                              \
  X(kAddF32R) X(kAddF32I) X(kSubF32R) X(kSubF32I) X(kMulF32R) X(kMulF32I) X(kFmaF32)              \
  /* ld/st of 4 or 8 bytes at a register plus offset, not volatile; global (or generic) or */    \
  /* shared; ld of a kernel parameter. */                                                         \
  X(kLdGlobalU32) X(kLdGlobalS32) X(kLdGlobal64) X(kLdSharedU32) X(kLdSharedS32) X(kLdShared64)   \
  X(kStGlobal32) X(kStGlobal64) X(kStShared32) X(kStShared64)                                     \
  X(kLdParamU32) X(kLdParamS32) X(kLdParam64) X(kLdGlobalU8) X(kStGlobal8)                      \
  /* .v2/.v4 of 4 bytes (not signed) or .v2 of 8, every element a register */                    \
  X(kLdGlobalVec32) X(kLdGlobalVec64) X(kLdSharedVec32) X(kLdSharedVec64)                         \
  X(kStGlobalVec32) X(kStGlobalVec64) X(kStSharedVec32) X(kStSharedVec64)                         \
  /* cvt.rn.f32.{s32,u32}, cvt.rzi.s32.f32 (integer to integer cvt is a kMov form) */            \
  X(kCvtF32S32) X(kCvtF32U32) X(kCvtS32F32Rzi)                                                    \
  /* selp, min, max: a second source that is a register or an immediate */                       \
  X(kSelpU32) X(kSelpS32) X(kSelp64)                                                              \
  X(kMinS32) X(kMaxS32) X(kMinU32) X(kMaxU32) X(kMinF32) X(kMaxF32)                               \
  X(kDivF32) X(kSqrtF32) X(kRsqrtF32) X(kRcpF32) X(kNegF32) X(kAbsF32)                            \
  /* f64: + - * fma div, setp, and conversions to and from f32 */                                 \
  X(kAddF64R) X(kAddF64I) X(kSubF64R) X(kSubF64I) X(kMulF64R) X(kMulF64I) X(kFmaF64) X(kDivF64)   \
  X(kSetpF64R) X(kSetpF64I) X(kCvtF64F32) X(kCvtF32F64)                                           \
  /* atom/red .add on 4 or 8 aligned bytes, global (or generic) or shared */                     \
  X(kAtomAddU32) X(kAtomAddS32) X(kAtomAdd64) X(kAtomAddF32) X(kRedAdd32) X(kRedAdd64) X(kRedAddF32) \
  X(kBra)                                                                                         \
  /* bar.sync / barrier.sync without a reduction: the thread stops there, already past it */    \
  X(kBarSync)
#define VGPU_PTX_FAST_ENUM(name) name,
enum class Fast : uint8_t { VGPU_PTX_FAST_FORMS(VGPU_PTX_FAST_ENUM) kCount };
#undef VGPU_PTX_FAST_ENUM

struct Instr {
  Op op = Op::kNop;
  Type type = Type::kNone;   // the (first) type suffix
  Type type2 = Type::kNone;  // the second type suffix (cvt source, set/slct operand type)
  Space space = Space::kGeneric;
  Cmp cmp = Cmp::kNone;
  BoolOp bool_op = BoolOp::kNone;
  Mode mode = Mode::kNone;
  uint8_t vec = 1;           // .v2/.v4
  uint8_t num_operands = 0;
  bool guard_negate = false;
  Fast fast = Fast::kNone;   // its specialized form, if it has one
  uint8_t fast_arg = 0;      // what that form needs beyond the operands (setp: see Fast)
  int32_t guard = -1;        // predicate register, -1 when unguarded
  uint32_t flags = 0;
  int32_t target = -1;       // bra: instruction index
  uint32_t line = 0;
  uint32_t text = 0;         // index into Program::texts: the opcode as written (for messages)
  Operand ops[6];
};

enum class SymbolKind : uint8_t {
  kGlobal, kConst, kShared, kExternShared, kLocal, kKernelParam, kFuncParam
};

struct Symbol {
  std::string name;
  SymbolKind kind = SymbolKind::kGlobal;
  uint64_t size = 0, align = 1;
  uint64_t offset = 0;  // kLocal: in its function's frame; params: in the parameter area
  bool has_init = false;
  std::vector<uint8_t> init;  // initial bytes of a module-scope variable
  // Initializer elements that are addresses of other variables (`generic($str)`): offset in
  // init, symbol id. Filled in when the interpreter makes its own copy.
  std::vector<std::pair<uint64_t, uint32_t>> init_addresses;
  std::string unsupported;  // why a kernel using this variable cannot run (e.g. a .texref)
};

struct Function {
  std::string name;
  bool is_entry = false, has_body = false;
  uint32_t line = 0;
  std::vector<uint32_t> params, retvals;  // symbol ids
  std::vector<Instr> code;
  uint32_t num_regs = 0;
  // An entry's registers that some path from its start may read before writing: all a new thread
  // needs zeroed, since no instruction sees what the others held before their first write. Set
  // with the fast forms (ptx_fast.cpp); every register where the analysis gave up.
  std::vector<uint32_t> read_before_written;
  uint64_t local_size = 0;       // bytes of .local (the __local_depot)
  uint64_t param_area_size = 0;  // formal params, return values and call-site .param variables
};

class Program {
 public:
  std::vector<Function> functions;
  std::vector<Symbol> symbols;
  std::unordered_map<std::string, uint32_t> function_index;
  std::vector<Operand> vector_elements;  // kVec operands point here
  std::vector<std::string> texts;
};

// Parses a PTX module as nvcc/ptxas input (".version", ".target", ".address_size", module-scope
// .global/.const/.shared variables, .func and .entry definitions). nullptr and *why on failure
// (first unsupported construct, with its line number). Instructions the interpreter cannot run
// still parse (as Op::kUnsupported) when their syntax is ordinary; run() then refuses them.
// Several modules separated by NULs (the objects of a program built with -rdc=true, as
// fatbin::ptx_text gives them) are linked: a function one declares .extern is the one another
// defines, a function two define is the first's; module variables are found by name.
std::unique_ptr<Program> parse(std::string_view text, std::string* why);
bool has_entry(const Program& p, std::string_view mangled_name);

}  // namespace vgpu::executor::sim::ptx
