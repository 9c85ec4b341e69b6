// PTX text -> Program. The input comes from a guest program: every size is bounded, every index
// checked, and a failure is a message with a line number, never a crash.
#include <cstring>
#include <optional>
#include <unordered_set>

#include "ptx_fast.h"
#include "ptx_lex.h"

namespace vgpu::executor::sim::ptx {
namespace {

constexpr size_t kMaxText = 256u << 20;
constexpr uint64_t kMaxRegsPerFunction = 1u << 20;
constexpr uint64_t kMaxVariableBytes = 1ull << 30;

// The operands each mbarrier form takes (n of them): the object is a memory operand.
bool mbarrier_operands(const Instr& in) {
  const uint32_t n = in.num_operands;
  auto mem = [&](uint32_t k) { return k < n && in.ops[k].kind == Operand::kMem; };
  switch (in.mode) {
    case Mode::kMbInit: return n == 2 && mem(0);                           // [a], count
    case Mode::kMbArrive: case Mode::kMbArriveDrop:  // state, [a]{, count | tx-count}
      return ((in.flags & kExpectTx) ? n == 3 : (n == 2 || n == 3)) && mem(1);
    case Mode::kMbExpectTx: case Mode::kMbCompleteTx: return n == 2 && mem(0);  // [a], tx-count
    case Mode::kMbBulkCopy:  // [dst], [src], size, [mbar]{, cache-policy}
      return n == ((in.flags & kCacheHint) ? 5u : 4u) && mem(0) && mem(1) && mem(3);
    case Mode::kMbTestWait: return (n == 3 || n == 4) && mem(1);           // p, [a], state{, hint}
    case Mode::kMbPendingCount: return n == 2 && !mem(1);                  // count, state
    case Mode::kMbInval: case Mode::kMbCpAsyncArrive: return n == 1 && mem(0);  // [a]
    default: return false;
  }
}

struct Scope {  // names visible inside one function body
  std::unordered_map<std::string, uint32_t> regs;
  std::unordered_map<std::string, std::pair<uint32_t, uint32_t>> reg_ranges;  // %r<N>: base, N
  std::unordered_map<std::string, uint32_t> symbols;
  std::unordered_map<std::string, uint32_t> labels;
  std::vector<std::pair<uint32_t, std::string>> branch_fixups;  // instruction, label
  // Registers declared inside nested `{ }` blocks shadow outer ones until the block closes
  // (nvcc's inline-asm wrappers declare `.reg .pred %p1;` inside a block): name, previous index.
  std::vector<std::vector<std::pair<std::string, int64_t>>> shadowed;
};

class Parser {
 public:
  Parser(std::vector<Token> toks, Program* p) : t_(std::move(toks)), p_(p) {}
  bool run(std::string* why);

 private:
  const Token& peek(size_t k = 0) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  const Token& next() { const Token& t = peek(); if (i_ < t_.size() - 1) ++i_; return t; }
  bool is(std::string_view s, size_t k = 0) const { return peek(k).kind != Token::kString && peek(k).text == s; }
  bool accept(std::string_view s) { if (is(s)) { next(); return true; } return false; }
  bool fail(const std::string& m) {
    if (err_.empty()) err_ = "line " + std::to_string(peek().line) + ": " + m;
    return false;
  }
  bool expect(std::string_view s) { return accept(s) ? true : fail("expected '" + std::string(s) + "' near '" + std::string(peek().text) + "'"); }
  void skip_line() { uint32_t l = peek().line; while (peek().kind != Token::kEnd && peek().line == l) next(); }
  void skip_statement() { while (peek().kind != Token::kEnd && !is(";")) next(); accept(";"); }

  bool module_item();
  bool variable(SymbolKind kind, Function* owner);
  bool function(bool is_entry);
  bool param_decl(Function& f, bool is_entry, bool is_ret);
  bool body(Function& f);
  bool reg_decl(Function& f);
  bool instruction(Function& f);
  bool call(Function& f, Instr& in);
  bool operand(Operand* o, bool label);
  bool symbol_ref(std::string_view name, Operand* o);
  bool number(int64_t* v);
  uint32_t add_symbol(Symbol s) { p_->symbols.push_back(std::move(s)); return (uint32_t)p_->symbols.size() - 1; }

  std::vector<Token> t_;
  size_t i_ = 0;
  Program* p_;
  std::string err_;
  Scope* scope_ = nullptr;
  uint32_t cur_func_ = 0;
  std::string pending_name_;  // set by operand() for a name it could not resolve yet
  // A texture or surface address `[handle, {coordinates}]`: operand() returns the handle and
  // leaves the coordinates here, for the operand slot after it.
  std::optional<Operand> coordinates_;
  std::string unknown_special_;  // a %name that is neither a register nor a special we know
  std::unordered_map<std::string, uint32_t> module_symbols_;
  std::vector<bool> predicates_;  // the current function's registers declared .pred
  struct Pending { uint32_t func, instr, op, line; std::string name; };
  std::vector<Pending> pending_;  // symbol/function names used before their declaration
  std::unordered_set<uint32_t> defined_here_;  // functions this unit (object) defines
};

bool Parser::number(int64_t* v) {
  bool neg = accept("-");
  if (peek().kind != Token::kNumber) return fail("expected a number near '" + std::string(peek().text) + "'");
  uint64_t bits; bool is_int;
  if (!parse_number(next().text, &bits, &is_int) || !is_int) return fail("bad integer");
  *v = (int64_t)(neg ? 0 - bits : bits);
  return true;
}

bool Parser::run(std::string* why) {
  while (peek().kind != Token::kEnd) {
    if (!module_item()) { *why = err_.empty() ? "parse error" : err_; return false; }
  }
  // Names used before their declaration (forward calls, late variables).
  for (auto& pd : pending_) {
    Operand& o = p_->functions[pd.func].code[pd.instr].ops[pd.op];
    if (o.kind == Operand::kFunc) {
      auto it = p_->function_index.find(pd.name);
      if (it == p_->function_index.end()) { *why = "line " + std::to_string(pd.line) + ": unknown function " + pd.name; return false; }
      o.id = it->second;
    } else if (auto it = module_symbols_.find(pd.name); it != module_symbols_.end()) {
      o.id = it->second;
    } else if (auto fn = p_->function_index.find(pd.name); fn != p_->function_index.end() && o.kind == Operand::kSym) {
      o.kind = Operand::kFunc;  // a kernel's address (`mov.u64 %rd, kernel`: a launch from the device)
      o.id = fn->second;
    } else {
      *why = "line " + std::to_string(pd.line) + ": unknown symbol " + pd.name;
      return false;
    }
  }
  return true;
}

bool Parser::module_item() {
  const Token& tk = peek();
  if (tk.text == ".version" || tk.text == ".target" || tk.text == ".address_size" || tk.text == ".file" ||
      tk.text == ".loc" || tk.text == ".section") {
    if (tk.text == ".section") {  // debug sections (-lineinfo/-G): skip the braced block
      skip_line();
      if (!accept("{")) return fail("bad .section");
      for (int depth = 1; depth > 0;) {
        if (peek().kind == Token::kEnd) return fail("unterminated .section");
        if (is("{")) ++depth;
        if (is("}")) --depth;
        next();
      }
      return true;
    }
    skip_line();
    return true;
  }
  if (tk.text == ".pragma") { skip_statement(); return true; }
  bool is_extern = false;
  while (is(".visible") || is(".extern") || is(".weak") || is(".common")) { if (next().text == ".extern") is_extern = true; }
  if (is(".entry")) { next(); return function(true); }
  if (is(".func")) { next(); return function(false); }
  if (is(".global")) { next(); return variable(SymbolKind::kGlobal, nullptr); }
  if (is(".const")) { next(); return variable(SymbolKind::kConst, nullptr); }
  if (is(".shared")) { next(); return variable(is_extern ? SymbolKind::kExternShared : SymbolKind::kShared, nullptr); }
  return fail("unsupported module-scope construct '" + std::string(tk.text) + "'");
}

// [.align N] [.v2/.v4] .type name[N]... [= init] ;  (the state space is already consumed)
bool Parser::variable(SymbolKind kind, Function* owner) {
  Symbol s;
  s.kind = kind;
  int64_t vec = 1;
  Type ty = Type::kNone;
  while (peek().kind == Token::kIdent && peek().text[0] == '.') {
    std::string_view a = next().text;
    if (a == ".align") { int64_t al; if (!number(&al)) return false; if (al <= 0 || al > 4096 || (al & (al - 1))) return fail("bad alignment"); s.align = al; }
    else if (a == ".v2") vec = 2; else if (a == ".v4") vec = 4;
    else if (auto t = type_of(a.substr(1))) ty = *t;
    else if (a == ".ptr" || a == ".global" || a == ".shared" || a == ".const" || a == ".local") {}
    else if (a == ".attribute") {
      // .attribute(.managed): a __managed__ variable; the environment gives its address like
      // any other's (the host maps it for both sides).
      if (!expect("(")) return false;
      if (!accept(".managed")) return fail("unsupported variable attribute .attribute(" + std::string(peek().text) + ")");
      if (!expect(")")) return false;
    }
    else if (a == ".texref" || a == ".samplerref" || a == ".surfref") {
      // Texture references: kept by name so that only a kernel using one is refused.
      if (peek().kind != Token::kIdent) return fail("bad " + std::string(a));
      s.name = std::string(next().text);
      s.unsupported = std::string(a) + " " + s.name;
      skip_statement();
      uint32_t id = add_symbol(std::move(s));
      module_symbols_[p_->symbols[id].name] = id;
      return true;
    }
    else return fail("unsupported variable attribute " + std::string(a));
  }
  if (ty == Type::kNone || peek().kind != Token::kIdent) return fail("bad variable declaration");
  s.name = std::string(next().text);
  uint64_t elem = (uint64_t)type_size(ty) * vec, count = 1;
  if (s.align < elem && kind != SymbolKind::kKernelParam) s.align = std::min<uint64_t>(elem, 16);
  bool unsized = false;
  while (accept("[")) {
    if (accept("]")) { unsized = true; continue; }
    int64_t n; if (!number(&n)) return false;
    if (n < 0 || (uint64_t)n > kMaxVariableBytes) return fail("array too large");
    count *= (uint64_t)n;
    if (count > kMaxVariableBytes) return fail("array too large");
    if (!expect("]")) return false;
  }
  s.size = unsized ? 0 : elem * count;
  if (accept("=")) {
    // Numeric initializers only ({1, 2, ...} or a scalar); each element has the variable's type.
    bool braced = accept("{");
    s.has_init = true;
    s.init.assign(s.size, 0);
    uint64_t k = 0;
    do {
      if (braced && is("}")) break;
      size_t es = type_size(ty);
      if (peek().kind == Token::kIdent) {  // the address of a variable: generic(name) or name
        bool generic = accept("generic");
        if (generic && !expect("(")) return false;
        auto target = peek().kind == Token::kIdent ? module_symbols_.find(std::string(next().text)) : module_symbols_.end();
        if (target == module_symbols_.end()) return fail("unsupported initializer in " + s.name);
        if (generic && !expect(")")) return false;
        if (es != 8) return fail("address initializer of a non-64-bit element in " + s.name);
        if ((k + 1) * es <= s.init.size()) s.init_addresses.push_back({k * es, target->second});
        ++k;
        continue;
      }
      bool neg = accept("-");
      if (peek().kind != Token::kNumber) return fail("unsupported initializer near '" + std::string(peek().text) + "'");
      uint64_t bits; bool is_int;
      if (!parse_number(next().text, &bits, &is_int)) return fail("bad number in initializer");
      if (neg) bits = is_int ? 0 - bits : bits ^ ((bits >> 32) ? (1ull << 63) : (1ull << 31));
      if (type_float(ty) && is_int) { double d = (double)(int64_t)bits; memcpy(&bits, &d, 8); }
      if (ty == Type::kF32 && (is_int || type_size(ty) == 4)) {
        if (bits >> 32 || is_int) { double d; memcpy(&d, &bits, 8); float f = (float)d; uint32_t b; memcpy(&b, &f, 4); bits = b; }
      }
      if ((k + 1) * es <= s.init.size()) memcpy(s.init.data() + k * es, &bits, es);
      ++k;
    } while (braced && accept(","));
    if (braced && !expect("}")) return false;
  }
  if (!expect(";")) return false;
  uint32_t id = add_symbol(std::move(s));
  if (owner) scope_->symbols[p_->symbols[id].name] = id;
  else module_symbols_[p_->symbols[id].name] = id;
  return true;
}

bool Parser::param_decl(Function& f, bool is_entry, bool is_ret) {
  if (!expect(".param")) return false;
  Symbol s;
  s.kind = is_entry ? SymbolKind::kKernelParam : SymbolKind::kFuncParam;
  Type ty = Type::kNone;
  while (peek().kind == Token::kIdent && peek().text[0] == '.') {
    std::string_view a = next().text;
    if (a == ".align") { int64_t al; if (!number(&al)) return false; if (al <= 0 || al > 4096 || (al & (al - 1))) return fail("bad alignment"); s.align = al; }
    else if (auto t = type_of(a.substr(1))) ty = *t;
    else if (a == ".ptr" || a == ".global" || a == ".shared" || a == ".const" || a == ".local") {}
    else return fail("unsupported parameter attribute " + std::string(a));
  }
  if (ty == Type::kNone || peek().kind != Token::kIdent) return fail("bad parameter declaration");
  s.name = std::string(next().text);
  uint64_t count = 1;
  if (accept("[")) { int64_t n; if (!number(&n) || !expect("]")) return false; if (n < 0 || n > (1 << 20)) return fail("parameter too large"); count = n; }
  s.size = type_size(ty) * count;
  if (s.align < (uint64_t)type_size(ty)) s.align = type_size(ty);
  s.offset = (f.param_area_size + s.align - 1) & ~(s.align - 1);
  f.param_area_size = s.offset + s.size;
  uint32_t id = add_symbol(std::move(s));
  (is_ret ? f.retvals : f.params).push_back(id);
  return true;
}

bool Parser::function(bool is_entry) {
  Function f;
  f.is_entry = is_entry;
  f.line = peek().line;
  if (!is_entry && accept("(")) {  // return parameters
    while (!is(")")) { if (!param_decl(f, false, true)) return false; if (!accept(",")) break; }
    if (!expect(")")) return false;
  }
  if (peek().kind != Token::kIdent) return fail("expected a function name");
  f.name = std::string(next().text);
  if (accept("(")) {
    while (!is(")")) { if (!param_decl(f, is_entry, false)) return false; if (!accept(",")) break; }
    if (!expect(")")) return false;
  }
  // Performance directives (.maxntid 256, 1, 1 / .reqntid / .minnctapersm / .noreturn ...).
  while (peek().kind == Token::kIdent && peek().text[0] == '.') { next(); while (peek().kind == Token::kNumber || is(",")) next(); }
  uint32_t index;
  auto it = p_->function_index.find(f.name);
  if (it != p_->function_index.end()) {
    index = it->second;
    if (p_->functions[index].has_body && is("{")) {
      if (defined_here_.count(index)) return fail("function " + f.name + " defined twice");
      // An earlier object defined it too (a .weak template or inline function, one copy per
      // object that uses it): the first stays; this body is read into an unreachable copy.
      index = (uint32_t)p_->functions.size();
      p_->functions.push_back(Function{});
    }
  } else {
    index = (uint32_t)p_->functions.size();
    p_->functions.push_back(Function{});
    p_->function_index[f.name] = index;
  }
  if (accept(";")) {  // a declaration: keep the signature until the definition comes
    if (!p_->functions[index].has_body) p_->functions[index] = std::move(f);
    return true;
  }
  defined_here_.insert(index);
  Scope scope;
  scope_ = &scope;
  for (uint32_t id : f.params) scope.symbols[p_->symbols[id].name] = id;
  for (uint32_t id : f.retvals) scope.symbols[p_->symbols[id].name] = id;
  p_->functions[index] = std::move(f);
  cur_func_ = index;
  predicates_.clear();
  if (!expect("{")) return false;
  bool ok = body(p_->functions[index]);
  scope_ = nullptr;
  if (!ok) return false;
  Function& g = p_->functions[index];
  g.has_body = true;
  for (auto& [instr, label] : scope.branch_fixups) {
    auto l = scope.labels.find(label);
    if (l == scope.labels.end()) return fail("branch to unknown label " + label + " in " + g.name);
    g.code[instr].target = (int32_t)l->second;
  }
  return true;
}

bool Parser::reg_decl(Function& f) {
  Type ty = Type::kNone;
  while (peek().kind == Token::kIdent && peek().text[0] == '.') {
    std::string_view a = next().text;
    if (auto t = type_of(a.substr(1))) ty = *t;
    else if (a != ".v2" && a != ".v4") return fail("unsupported register attribute " + std::string(a));
  }
  if (ty == Type::kNone) return fail("register declaration without a type");
  do {
    if (peek().kind != Token::kIdent) return fail("expected a register name");
    std::string name(next().text);
    uint64_t count = 1;
    bool range = false;
    if (accept("<")) { int64_t n; if (!number(&n) || !expect(">")) return false; if (n < 0 || (uint64_t)n > kMaxRegsPerFunction) return fail("too many registers"); count = n; range = true; }
    if (f.num_regs + count > kMaxRegsPerFunction) return fail("too many registers");
    if (range) {
      scope_->reg_ranges[name] = {f.num_regs, (uint32_t)count};
    } else if (!scope_->shadowed.empty()) {
      auto old = scope_->regs.find(name);
      scope_->shadowed.back().push_back({name, old == scope_->regs.end() ? -1 : (int64_t)old->second});
      scope_->regs[name] = f.num_regs;
    } else if (scope_->regs.count(name)) {
      continue;  // declared twice at function level: one register
    } else {
      scope_->regs[name] = f.num_regs;
    }
    predicates_.resize(f.num_regs + count, false);
    if (ty == Type::kPred) std::fill(predicates_.begin() + f.num_regs, predicates_.end(), true);
    f.num_regs += (uint32_t)count;
  } while (accept(","));
  return expect(";");
}

bool Parser::body(Function& f) {
  int depth = 1;
  while (depth > 0) {
    const Token& tk = peek();
    if (tk.kind == Token::kEnd) return fail("unexpected end of file in " + f.name);
    if (accept("{")) { ++depth; scope_->shadowed.emplace_back(); continue; }
    if (accept("}")) {
      if (--depth > 0 && !scope_->shadowed.empty()) {
        auto& block = scope_->shadowed.back();
        for (auto r = block.rbegin(); r != block.rend(); ++r) {
          if (r->second < 0) scope_->regs.erase(r->first);
          else scope_->regs[r->first] = (uint32_t)r->second;
        }
        scope_->shadowed.pop_back();
      }
      continue;
    }
    if (tk.text == ".loc" || tk.text == ".file") { skip_line(); continue; }
    if (tk.text == ".pragma") { skip_statement(); continue; }
    if (tk.text == ".reg") { next(); if (!reg_decl(f)) return false; continue; }
    if (tk.text == ".local") {
      next();
      size_t before = p_->symbols.size();
      if (!variable(SymbolKind::kLocal, &f)) return false;
      if (p_->symbols.size() > before) {
        Symbol& s = p_->symbols.back();
        s.offset = (f.local_size + s.align - 1) & ~(s.align - 1);
        f.local_size = s.offset + s.size;
      }
      continue;
    }
    if (tk.text == ".shared") { next(); if (!variable(SymbolKind::kShared, &f)) return false; continue; }
    if (tk.text == ".param") {
      if (!param_decl(f, false, false)) return false;
      uint32_t id = f.params.back();
      f.params.pop_back();  // a call-site variable, not a formal parameter
      scope_->symbols[p_->symbols[id].name] = id;
      if (!expect(";")) return false;
      continue;
    }
    if (tk.kind == Token::kIdent && peek(1).text == ":" && tk.text[0] != '%' && tk.text[0] != '.') {
      std::string label(next().text);
      next();
      scope_->labels[label] = (uint32_t)f.code.size();
      continue;
    }
    if (!instruction(f)) return false;
  }
  return true;
}

bool Parser::symbol_ref(std::string_view name, Operand* o) {
  o->kind = Operand::kSym;
  std::string n(name);
  auto it = scope_->symbols.find(n);
  if (it != scope_->symbols.end()) { o->id = it->second; return true; }
  it = module_symbols_.find(n);
  if (it != module_symbols_.end()) { o->id = it->second; return true; }
  o->id = UINT32_MAX;  // resolved at the end of the module
  return true;
}

bool Parser::operand(Operand* o, bool label) {
  if (accept("!")) { o->negate = true; }
  if (accept("[")) {
    o->kind = Operand::kMem;
    if (peek().kind == Token::kIdent) {
      std::string_view n = next().text;
      if (n[0] == '%' || (scope_ && scope_->regs.count(std::string(n)))) {
        Operand r; if (!(--i_, operand(&r, false))) return false;
        if (r.kind != Operand::kReg) return fail("unsupported address register " + std::string(n));
        o->mem_base = 1; o->id = r.id;
      } else {
        Operand s; symbol_ref(n, &s);
        o->mem_base = 2; o->id = s.id;
        if (s.id == UINT32_MAX) pending_name_ = std::string(n);
      }
      if (accept("+")) { int64_t v; if (!number(&v)) return false; o->value = v; }
      else if (is("-")) { int64_t v; if (!number(&v)) return false; o->value = v; }
      if (accept(",")) {
        Operand c;
        if (coordinates_ || !is("{") || !operand(&c, false)) return fail("bad texture or surface coordinates");
        coordinates_ = c;
      }
    } else {
      int64_t v; if (!number(&v)) return false; o->value = v;
    }
    return expect("]");
  }
  if (accept("{")) {
    o->kind = Operand::kVec;
    std::vector<Operand> elems;
    do {
      if (is("{") || is("[")) return fail("unsupported vector element");  // and no unbounded recursion
      Operand e;
      if (!operand(&e, false)) return false;
      elems.push_back(e);
    } while (accept(","));
    if (!expect("}")) return false;
    if (elems.size() > 8) return fail("vector too long");
    o->id = (uint32_t)p_->vector_elements.size();
    o->value = (int64_t)elems.size();
    for (auto& e : elems) {
      const bool resolved_symbol = e.kind == Operand::kSym && e.id != UINT32_MAX;  // no fixups inside vectors
      if (e.kind != Operand::kReg && e.kind != Operand::kImm && e.kind != Operand::kSink && e.kind != Operand::kSpecial &&
          !resolved_symbol)
        return fail("unsupported vector element");
      p_->vector_elements.push_back(e);
    }
    return true;
  }
  if (is("-") || peek().kind == Token::kNumber) {
    bool neg = accept("-");
    if (peek().kind != Token::kNumber) return fail("expected a number");
    uint64_t bits; bool is_int;
    if (!parse_number(next().text, &bits, &is_int)) return fail("bad number");
    if (neg) bits = is_int ? 0 - bits : bits ^ ((bits >> 32) ? (1ull << 63) : (1ull << 31));
    o->kind = Operand::kImm; o->value = (int64_t)bits; o->int_literal = is_int;
    return true;
  }
  if (peek().kind != Token::kIdent) return fail("unexpected operand '" + std::string(peek().text) + "'");
  std::string_view n = next().text;
  if (n == "_") { o->kind = Operand::kSink; return true; }
  // A declared register, with or without `%` (inline asm names its own `r0`, `p`).
  std::string name(n);
  size_t d = name.size();
  while (d > 0 && isdigit((unsigned char)name[d - 1])) --d;
  if (scope_) {
    auto it = scope_->regs.find(name);
    if (it != scope_->regs.end()) { o->kind = Operand::kReg; o->id = it->second; return true; }
    if (d < name.size() && d > 0 && name.size() - d < 9) {
      auto r = scope_->reg_ranges.find(name.substr(0, d));
      uint64_t k = strtoull(name.c_str() + d, nullptr, 10);
      if (r != scope_->reg_ranges.end() && k < r->second.second) { o->kind = Operand::kReg; o->id = r->second.first + (uint32_t)k; return true; }
    }
  }
  if (n[0] == '%') {
    if (auto sp = special_of(n)) { o->kind = Operand::kSpecial; o->id = (uint32_t)*sp; return true; }
    if (d < name.size() && scope_->reg_ranges.count(name.substr(0, d))) return fail("undeclared register " + name);
    // Probably a special register we do not implement (%clusterid.x, %envreg3 ...): the
    // instruction parses and run() refuses it by name.
    unknown_special_ = name;
    o->kind = Operand::kImm;
    return true;
  }
  if (n == "WARP_SZ") { o->kind = Operand::kImm; o->value = 32; o->int_literal = true; return true; }
  if (label) { o->kind = Operand::kLabel; pending_name_ = std::string(n); return true; }
  symbol_ref(n, o);
  if (o->id == UINT32_MAX) pending_name_ = std::string(n);
  if (accept("+")) { int64_t v; if (!number(&v)) return false; o->value = v; }
  return true;
}

bool Parser::call(Function& f, Instr& in) {
  Operand ret;
  if (accept("(")) {
    if (!is(")")) {
      if (peek().kind != Token::kIdent) return fail("bad call return");
      symbol_ref(next().text, &ret);
      if (ret.id == UINT32_MAX) return fail("unknown call return variable");
    }
    if (!expect(")") || !expect(",")) return false;
  }
  if (peek().kind != Token::kIdent) return fail("bad call target");
  std::string_view callee = next().text;
  if (callee[0] == '%') { in.op = Op::kUnsupported; in.text = (uint32_t)p_->texts.size(); p_->texts.push_back("indirect call"); skip_statement(); f.code.push_back(in); return true; }
  std::vector<Operand> args;
  if (accept(",")) {
    if (!expect("(")) return false;
    while (!is(")")) {
      if (peek().kind != Token::kIdent) return fail("bad call argument");
      Operand a; symbol_ref(next().text, &a);
      if (a.id == UINT32_MAX) return fail("unknown call argument");
      args.push_back(a);
      if (args.size() > 64) return fail("too many call arguments");
      if (!accept(",")) break;
    }
    if (!expect(")")) return false;
    if (accept(",")) { in.op = Op::kUnsupported; p_->texts.back() += " (prototype)"; skip_statement(); f.code.push_back(in); return true; }
  }
  if (!expect(";")) return false;
  in.ops[0] = ret;
  in.ops[1].kind = Operand::kFunc;
  in.ops[2].kind = Operand::kVec;
  in.ops[2].id = (uint32_t)p_->vector_elements.size();
  in.ops[2].value = (int64_t)args.size();
  for (auto& a : args) p_->vector_elements.push_back(a);
  in.num_operands = 3;
  f.code.push_back(in);
  pending_.push_back({cur_func_, (uint32_t)f.code.size() - 1, 1, in.line, std::string(callee)});
  return true;
}

bool Parser::instruction(Function& f) {
  Instr in;
  coordinates_.reset();
  in.line = peek().line;
  if (accept("@")) {
    in.guard_negate = accept("!");
    Operand g;
    if (!operand(&g, false)) return false;
    if (g.kind != Operand::kReg) return fail("bad guard predicate");
    in.guard = (int32_t)g.id;
  }
  if (peek().kind != Token::kIdent) return fail("expected an instruction near '" + std::string(peek().text) + "'");
  std::string_view opcode = next().text;
  in.text = (uint32_t)p_->texts.size();
  p_->texts.emplace_back(opcode);
  if (p_->texts.size() > (1u << 24)) return fail("too many instructions");
  bool known = decode_opcode(opcode, &in);
  if (!known) {
    // Skip the operands generically; run() refuses the instruction by name.
    in.op = Op::kUnsupported;
    skip_statement();
    f.code.push_back(in);
    return true;
  }
  if (in.op == Op::kCall) return call(f, in);
  bool dual = in.op == Op::kSetp || in.op == Op::kShfl || in.op == Op::kMatch;  // d|p
  uint32_t n = 0;
  while (n > 0 || !is(";")) {  // after a comma an operand must follow
    if (n >= 6) return fail("too many operands");
    Operand o;
    if (!operand(&o, in.op == Op::kBra)) return false;
    uint32_t slot = n++;
    in.ops[slot] = o;
    if (coordinates_) {
      if (in.op != Op::kTex && in.op != Op::kSuld && in.op != Op::kSust) return fail("coordinates in a memory operand of " + std::string(opcode));
      if (n >= 6) return fail("too many operands");
      in.ops[n++] = *coordinates_;
      coordinates_.reset();
    }
    if (!pending_name_.empty()) {
      if (o.kind == Operand::kLabel) scope_->branch_fixups.push_back({(uint32_t)f.code.size(), pending_name_});
      else pending_.push_back({cur_func_, (uint32_t)f.code.size(), slot, in.line, pending_name_});
      pending_name_.clear();
    }
    if (dual && slot == 0) {
      if (accept("|")) { if (!operand(&in.ops[n++], false)) return false; }
      else ++n;  // keep the optional second destination's slot empty
    }
    if (!accept(",")) break;
  }
  if (!expect(";")) return false;
  in.num_operands = (uint8_t)n;
  if (in.op == Op::kCpAsync) {
    // [dst], [src], cp-size{, src-size | ignore-src}{, cache-policy}
    const uint32_t plain = n - ((in.flags & kCacheHint) ? 1 : 0);
    if (plain < 3 || plain > 4 || in.ops[0].kind != Operand::kMem || in.ops[1].kind != Operand::kMem || in.ops[2].kind != Operand::kImm)
      return fail("bad operands of " + std::string(opcode));
    const uint64_t size = (uint64_t)in.ops[2].value;
    if (size != 4 && size != 8 && size != 16) return fail("cp.async copies 4, 8 or 16 bytes");
    const Operand& fourth = in.ops[3];
    if (plain == 4 && fourth.kind == Operand::kReg && fourth.id < predicates_.size() && predicates_[fourth.id]) in.flags |= kIgnoreSrc;
  }
  if (in.op == Op::kMbarrier && !mbarrier_operands(in)) return fail("bad operands of " + std::string(opcode));
  if (!unknown_special_.empty()) {
    in.op = Op::kUnsupported;
    p_->texts[in.text] = "special register " + unknown_special_ + " in " + std::string(opcode);
    unknown_special_.clear();
  }
  // Integer literals in float instructions denote the float value.
  Type ft = in.op == Op::kCvt ? in.type2 : (in.op == Op::kSet || in.op == Op::kSlct) ? in.type2 : in.type;
  if (type_float(ft) && in.op != Op::kLd && in.op != Op::kSt) {
    for (uint32_t k = (in.op == Op::kSt ? 0 : 1); k < n; ++k) {
      Operand& o = in.ops[k];
      if (o.kind != Operand::kImm) continue;
      double d;
      if (o.int_literal) d = (double)o.value;
      else if (ft == Type::kF32 && ((uint64_t)o.value >> 32)) memcpy(&d, &o.value, 8);
      else continue;
      if (ft == Type::kF32) { float fl = (float)d; uint32_t b; memcpy(&b, &fl, 4); o.value = b; }
      else memcpy(&o.value, &d, 8);
      o.int_literal = false;
    }
  }
  if (in.op == Op::kBra && (n < 1 || in.ops[0].kind != Operand::kLabel)) return fail("unsupported branch form");
  f.code.push_back(in);
  return true;
}

}  // namespace

std::unique_ptr<Program> parse(std::string_view text, std::string* why) {
  std::string dummy;
  if (!why) why = &dummy;
  if (text.size() > kMaxText) { *why = "PTX text too large"; return nullptr; }
  auto p = std::make_unique<Program>();
  // One unit per object (NUL between them), linked by name: a function declared .extern in one
  // is the one another defines; module variables are found by name (Environment::symbol_address).
  for (size_t at = 0; at <= text.size();) {
    const size_t end = std::min(text.find('\0', at), text.size());
    std::vector<Token> toks;
    if (!lex(text.substr(at, end - at), &toks, why)) return nullptr;
    Parser parser(std::move(toks), p.get());
    if (!parser.run(why)) return nullptr;
    at = end + 1;
  }
  choose_fast_forms(*p);
  return p;
}

bool has_entry(const Program& p, std::string_view mangled_name) {
  auto it = p.function_index.find(std::string(mangled_name));
  return it != p.function_index.end() && p.functions[it->second].is_entry && p.functions[it->second].has_body;
}

}  // namespace vgpu::executor::sim::ptx
