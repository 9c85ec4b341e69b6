// Opcode decoding: the dotted opcode text into Op, types, state space and modifier flags.
#include "ptx_lex.h"

namespace vgpu::executor::sim::ptx {
namespace {

struct OpName { const char* name; Op op; };
const OpName kOps[] = {
    {"mov", Op::kMov}, {"ld", Op::kLd}, {"ldu", Op::kLd}, {"st", Op::kSt}, {"add", Op::kAdd},
    {"addc", Op::kAdd}, {"sub", Op::kSub}, {"subc", Op::kSub}, {"mul", Op::kMul}, {"mad", Op::kMad},
    {"madc", Op::kMad}, {"mul24", Op::kMul24}, {"mad24", Op::kMad24}, {"fma", Op::kFma},
    {"div", Op::kDiv}, {"rem", Op::kRem}, {"abs", Op::kAbs}, {"neg", Op::kNeg}, {"min", Op::kMin},
    {"max", Op::kMax}, {"and", Op::kAnd}, {"or", Op::kOr}, {"xor", Op::kXor}, {"not", Op::kNot},
    {"cnot", Op::kCnot}, {"shl", Op::kShl}, {"shr", Op::kShr}, {"shf", Op::kShf},
    {"selp", Op::kSelp}, {"slct", Op::kSlct}, {"setp", Op::kSetp}, {"set", Op::kSet},
    {"cvt", Op::kCvt}, {"cvta", Op::kCvta}, {"sqrt", Op::kSqrt}, {"rsqrt", Op::kRsqrt},
    {"rcp", Op::kRcp}, {"ex2", Op::kEx2}, {"lg2", Op::kLg2}, {"sin", Op::kSin}, {"cos", Op::kCos},
    {"tanh", Op::kTanh}, {"copysign", Op::kCopysign}, {"popc", Op::kPopc}, {"clz", Op::kClz},
    {"brev", Op::kBrev}, {"bfe", Op::kBfe}, {"bfi", Op::kBfi}, {"prmt", Op::kPrmt},
    {"bfind", Op::kBfind}, {"lop3", Op::kLop3}, {"testp", Op::kTestp}, {"atom", Op::kAtom}, {"red", Op::kRed},
    {"bra", Op::kBra}, {"ret", Op::kRet}, {"exit", Op::kExit}, {"call", Op::kCall},
    {"bar", Op::kBar}, {"barrier", Op::kBar}, {"membar", Op::kNop}, {"fence", Op::kNop},
    {"trap", Op::kTrap}, {"shfl", Op::kShfl}, {"vote", Op::kVote}, {"activemask", Op::kActivemask},
    {"match", Op::kMatch}, {"redux", Op::kRedux}, {"dp4a", Op::kDp4a}, {"dp2a", Op::kDp2a},
    {"tex", Op::kTex}, {"suld", Op::kSuld}, {"sust", Op::kSust}, {"brkpt", Op::kNop}, {"nanosleep", Op::kNop}, {"prefetch", Op::kNop}, {"prefetchu", Op::kNop}, {"pmevent", Op::kNop},
};

std::optional<Cmp> cmp_of(std::string_view s) {
  static const std::pair<const char*, Cmp> k[] = {
      {"eq", Cmp::kEq}, {"ne", Cmp::kNe}, {"lt", Cmp::kLt}, {"le", Cmp::kLe}, {"gt", Cmp::kGt},
      {"ge", Cmp::kGe}, {"lo", Cmp::kLo}, {"ls", Cmp::kLs}, {"hi", Cmp::kHi}, {"hs", Cmp::kHs},
      {"equ", Cmp::kEqu}, {"neu", Cmp::kNeu}, {"ltu", Cmp::kLtu}, {"leu", Cmp::kLeu},
      {"gtu", Cmp::kGtu}, {"geu", Cmp::kGeu}, {"num", Cmp::kNum}, {"nan", Cmp::kNan}};
  for (auto& [n, c] : k) if (s == n) return c;
  return std::nullopt;
}

// mbarrier.OP{.modifiers}.b64, cp.async.mbarrier.arrive{.noinc}{.shared}.b64 and the bulk copy
// that completes on an mbarrier, cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes
// (ptx_mbarrier.cpp). Without clusters a CTA's shared::cluster window is its own shared memory.
// Not known, so refused by name: multicast, remote (mapa) barriers' forms, tensor copies.
bool decode_mbarrier(std::string_view text, Instr* in) {
  static const std::pair<const char*, Mode> kModes[] = {
      {"init", Mode::kMbInit}, {"arrive", Mode::kMbArrive}, {"arrive_drop", Mode::kMbArriveDrop},
      {"test_wait", Mode::kMbTestWait}, {"try_wait", Mode::kMbTestWait},
      {"pending_count", Mode::kMbPendingCount}, {"inval", Mode::kMbInval},
      {"expect_tx", Mode::kMbExpectTx}, {"complete_tx", Mode::kMbCompleteTx}};
  // Orderings and scopes change nothing where a CTA's threads take turns on one host thread.
  static const char* kIgnored[] = {"b64", "noComplete", "release", "acquire", "relaxed", "cta", "cluster"};
  constexpr std::string_view kCopies = "cp.async.mbarrier.arrive";
  constexpr std::string_view kBulk = "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes";
  constexpr std::string_view kBulkCta = "cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes";
  const bool copies = text.starts_with(kCopies);
  const bool bulk = text.starts_with(kBulk) || text.starts_with(kBulkCta);
  std::string_view rest = text.substr(copies ? kCopies.size()
                                      : bulk ? (text.starts_with(kBulk) ? kBulk.size() : kBulkCta.size())
                                             : std::string_view("mbarrier").size());
  in->op = Op::kMbarrier;
  in->mode = copies ? Mode::kMbCpAsyncArrive : bulk ? Mode::kMbBulkCopy : Mode::kNone;
  in->type = Type::kB64;
  if (bulk) {
    in->space = Space::kShared;
    if (rest.empty()) return true;
    if (rest == ".L2::cache_hint") {
      in->flags |= kCacheHint;
      return true;
    }
    in->op = Op::kUnsupported;
    return false;
  }
  while (!rest.empty()) {
    const size_t nd = rest.find('.', 1);
    const std::string_view m = rest.substr(1, nd == std::string_view::npos ? std::string_view::npos : nd - 1);
    rest = nd == std::string_view::npos ? std::string_view() : rest.substr(nd);
    bool known = false;
    if (in->mode == Mode::kNone) {
      for (auto& [name, mode] : kModes) if (m == name) { in->mode = mode; known = true; }
    } else if (m == "parity" && in->mode == Mode::kMbTestWait) {
      in->flags |= kParity;
      known = true;
    } else if (m == "noinc" && copies) {
      in->flags |= kNoinc;
      known = true;
    } else if (m == "expect_tx" && (in->mode == Mode::kMbArrive || in->mode == Mode::kMbArriveDrop)) {
      in->flags |= kExpectTx;
      known = true;
    } else if (m == "shared" || m == "shared::cta") {
      in->space = Space::kShared;
      known = true;
    } else {
      for (const char* ig : kIgnored) if (m == ig) known = true;
    }
    if (!known) break;
    if (rest.empty()) return in->mode != Mode::kNone;
  }
  in->op = Op::kUnsupported;
  return false;
}

// Decodes the dotted opcode into the instruction's fields; false for a modifier we do not know

}  // namespace

// (the instruction then becomes kUnsupported, so run() names it).
bool decode_opcode(std::string_view text, Instr* in) {
  size_t dot = text.find('.');
  std::string_view base = text.substr(0, dot);
  in->op = Op::kUnsupported;
  // __syncwarp: the warp's threads meet there (the interpreter runs them one at a time, so a
  // value one lane stored in shared memory is seen by the others only after it).
  if (text == "bar.warp.sync") { in->op = Op::kWarpSync; return true; }
  // cp.async: the interpreter copies at once, so a group's commit and wait have nothing to do.
  // The bulk (TMA) and mbarrier-completed forms are refused by name.
  if (text == "cp.async.commit_group" || text == "cp.async.wait_group" || text == "cp.async.wait_all") {
    in->op = Op::kNop;
    return true;
  }
  // A cache policy is an opaque 64-bit value only cache hints read, and caches are not modeled:
  // any value will do (the first source operand's bits).
  if (text.starts_with("createpolicy.")) {
    in->op = Op::kMov;
    in->type = Type::kB64;
    return true;
  }
  if (text.starts_with("wmma.")) return decode_wmma(text, in);
  // wmma::__float_to_tf32, for tf32 tensor-core fragments.
  if (text == "cvt.rna.tf32.f32" || text == "cvt.rna.satfinite.tf32.f32") {
    in->op = Op::kCvt;
    in->type = Type::kB32;
    in->type2 = Type::kF32;
    in->flags |= kToTf32;
    return true;
  }
  if (text.starts_with("mbarrier.") || text.starts_with("cp.async.mbarrier.arrive") ||
      text.starts_with("cp.async.bulk.shared::c")) {
    return decode_mbarrier(text, in);
  }
  if (text.starts_with("cp.async.ca.") || text.starts_with("cp.async.cg.")) {
    in->op = Op::kCpAsync;
    for (size_t at = 11; at != std::string_view::npos;) {
      const size_t nd = text.find('.', at + 1);
      const std::string_view m = text.substr(at + 1, nd == std::string_view::npos ? std::string_view::npos : nd - at - 1);
      at = nd;
      if (m == "L2::cache_hint") in->flags |= kCacheHint;
      else if (m != "shared" && m != "shared::cta" && m != "global" && !m.starts_with("L2::")) { in->op = Op::kUnsupported; return false; }
    }
    return true;
  }
  for (auto& o : kOps) if (base == o.name) in->op = o.op;
  if (in->op == Op::kUnsupported) return false;
  if (base == "addc" || base == "subc" || base == "madc") in->flags |= kCarryIn;
  Op op = in->op;
  while (dot != std::string_view::npos) {
    size_t nd = text.find('.', dot + 1);
    std::string_view m = text.substr(dot + 1, nd == std::string_view::npos ? std::string_view::npos : nd - dot - 1);
    dot = nd;
    if (auto t = type_of(m)) { (in->type == Type::kNone ? in->type : in->type2) = *t; continue; }
    if (op == Op::kSetp || op == Op::kSet) {
      if (in->cmp == Cmp::kNone) { if (auto c = cmp_of(m)) { in->cmp = *c; continue; } }
      if (m == "and") { in->bool_op = BoolOp::kAnd; continue; }
      if (m == "or") { in->bool_op = BoolOp::kOr; continue; }
      if (m == "xor") { in->bool_op = BoolOp::kXor; continue; }
    }
    if (op == Op::kMatch) {
      if (m == "any") { in->mode = Mode::kAny; continue; } if (m == "all") { in->mode = Mode::kAll; continue; }
    }
    if (op == Op::kAtom || op == Op::kRed || op == Op::kRedux) {
      static const std::pair<const char*, Mode> k[] = {{"add", Mode::kAdd}, {"min", Mode::kMin}, {"max", Mode::kMax}, {"inc", Mode::kInc}, {"dec", Mode::kDec}, {"exch", Mode::kExch}, {"cas", Mode::kCas}, {"and", Mode::kAnd}, {"or", Mode::kOr}, {"xor", Mode::kXor}};
      bool found = false;
      for (auto& [n, md] : k) if (m == n) { in->mode = md; found = true; }
      if (found) continue;
    }
    if (op == Op::kShfl) {
      if (m == "up") { in->mode = Mode::kUp; continue; } if (m == "down") { in->mode = Mode::kDown; continue; }
      if (m == "bfly") { in->mode = Mode::kBfly; continue; } if (m == "idx") { in->mode = Mode::kIdx; continue; }
    }
    if (op == Op::kVote) {
      if (m == "all") { in->mode = Mode::kAll; continue; } if (m == "any") { in->mode = Mode::kAny; continue; }
      if (m == "uni") { in->mode = Mode::kUni; continue; } if (m == "ballot") { in->mode = Mode::kBallot; continue; }
    }
    if (op == Op::kTestp) {
      static const std::pair<const char*, Mode> k[] = {{"finite", Mode::kFinite}, {"infinite", Mode::kInfinite}, {"number", Mode::kNumber}, {"notanumber", Mode::kNotANumber}, {"normal", Mode::kNormal}, {"subnormal", Mode::kSubnormal}};
      bool found = false;
      for (auto& [n, md] : k) if (m == n) { in->mode = md; found = true; }
      if (found) continue;
    }
    if (op == Op::kBar) {  // bar.red.{popc,and,or}: a barrier that also reduces a predicate
      if (m == "popc") { in->mode = Mode::kAdd; continue; }
      if (m == "and") { in->mode = Mode::kAnd; continue; }
      if (m == "or") { in->mode = Mode::kOr; continue; }
    }
    if (op == Op::kShf) {
      if (m == "l") { in->mode = Mode::kLeft; continue; } if (m == "r") { in->mode = Mode::kRight; continue; }
      if (m == "clamp") { in->flags |= kClamp; continue; } if (m == "wrap") continue;
    }
    if (op == Op::kTex || op == Op::kSuld || op == Op::kSust) {
      static const std::pair<const char*, Mode> k[] = {{"1d", Mode::kTex1d}, {"2d", Mode::kTex2d}, {"3d", Mode::kTex3d}, {"a1d", Mode::kTexA1d}, {"a2d", Mode::kTexA2d}, {"cube", Mode::kTexCube}, {"acube", Mode::kTexACube}};
      bool found = false;
      for (auto& [n, md] : k) if (m == n) { in->mode = md; found = true; }
      if (found) continue;
      if (op == Op::kTex && m == "level") { in->flags |= kLevel; continue; }
      if (op == Op::kTex && m == "base") continue;
      // Surfaces: unformatted (.b) access only; what happens outside the surface.
      if (op != Op::kTex && (m == "b" || m == "trap")) continue;
      if (op != Op::kTex && m == "clamp") { in->flags |= kClamp; continue; }
      if (op != Op::kTex && m == "zero") { in->flags |= kBoundaryZero; continue; }
    }
    if (m == "global") { in->space = Space::kGlobal; continue; }
    if (m == "shared" || m == "shared::cta") { in->space = Space::kShared; continue; }
    if (m == "local") { in->space = Space::kLocal; continue; }
    if (m == "const") { in->space = Space::kConst; continue; }
    if (m == "param") { in->space = Space::kParam; continue; }
    if (m == "v2") { in->vec = 2; continue; } if (m == "v4") { in->vec = 4; continue; }
    if (m == "volatile") { in->flags |= kVolatile; continue; }
    static const std::pair<const char*, uint32_t> kFlags[] = {
        {"hi", kHi}, {"lo", kLo}, {"wide", kWide}, {"sat", kSat}, {"cc", kCarryOut}, {"rn", kRn},
        {"rz", kRz}, {"rm", kRm}, {"rp", kRp}, {"rni", kRni}, {"rzi", kRzi}, {"rmi", kRmi},
        {"rpi", kRpi}, {"to", kTo}, {"approx", kApprox}, {"shiftamt", kShiftAmt}};
    bool found = false;
    for (auto& [n, f] : kFlags) if (m == n) { in->flags |= f; found = true; }
    if (found) continue;
    // Qualifiers that change nothing for a one-thread-at-a-time interpreter on coherent memory.
    static const char* kIgnored[] = {"L1", "L2", "ftz", "full", "uni", "nc", "sync", "aligned", "ca", "cg", "cs", "lu", "cv", "wb", "wt", "relaxed", "acquire", "release", "acq_rel", "sc", "weak", "cta", "gpu", "sys", "gl", "noftz", "arrive", "red", "L1::evict_last", "L1::evict_first", "L1::no_allocate", "L2::64B", "L2::128B", "L2::256B", "L1::evict_normal", "L1::evict_unchanged", "L2::evict_first", "L2::evict_last", "L2::evict_normal"};
    for (const char* ig : kIgnored) if (m == ig) found = true;
    if (found) continue;
    in->op = Op::kUnsupported;
    return false;
  }
  // Forms of a known opcode that are something else entirely.
  if (op == Op::kBar && text.find(".arrive") != std::string_view::npos) { in->op = Op::kUnsupported; return false; }
  return true;
}

}  // namespace vgpu::executor::sim::ptx
