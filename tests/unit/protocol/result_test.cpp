// vgpu::Result: the error type of module boundaries outside CUDA (a category and a message).
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "vgpu/result.h"

using vgpu::code_name;
using vgpu::Result;
using Code = Result::Code;

// Cheap when ok: one pointer, nothing allocated.
static_assert(sizeof(Result) == sizeof(void*));

TEST_CASE("an ok Result has no category and no message") {
  const Result r;
  CHECK(r.ok());
  CHECK(r.code() == Code::kOk);
  CHECK(r.is(Code::kOk));
  CHECK(r.message().empty());
  CHECK(r.text() == "ok");
}

TEST_CASE("each factory makes its category, with the message unchanged") {
  struct Case {
    Result r;
    Code code;
  };
  const std::string m = "permission denied: only admins add users";
  for (const Case& k :
       {Case{Result::invalid_argument(m), Code::kInvalidArgument},
        Case{Result::not_found(m), Code::kNotFound},
        Case{Result::already_exists(m), Code::kAlreadyExists},
        Case{Result::conflict(m), Code::kConflict},
        Case{Result::permission_denied(m), Code::kPermissionDenied},
        Case{Result::read_only(m), Code::kReadOnly}, Case{Result::busy(m), Code::kBusy},
        Case{Result::storage(m), Code::kStorage},
        Case{Result::unavailable(m), Code::kUnavailable}}) {
    INFO(code_name(k.code));
    CHECK_FALSE(k.r.ok());
    CHECK(k.r.code() == k.code);
    CHECK(k.r.is(k.code));
    CHECK_FALSE(k.r.is(Code::kOk));
    CHECK(k.r.message() == m);
    CHECK(k.r.text() == m);
  }
}

TEST_CASE("the category, not the message, says what kind of refusal it is") {
  // A message that reads like a permission refusal is whatever its category says.
  const Result r = Result::not_found("permission denied: but this is a lookup");
  CHECK(r.code() == Code::kNotFound);
  CHECK_FALSE(r.is(Code::kPermissionDenied));
}

TEST_CASE("copies and moves keep the category and the message") {
  Result a = Result::conflict("VM 'x' is bound to student 'y': unbind it first");
  Result b = a;
  CHECK(b.code() == Code::kConflict);
  CHECK(b.message() == a.message());
  b = Result::busy("later");  // the copy is its own
  CHECK(a.code() == Code::kConflict);
  CHECK(a.message() == "VM 'x' is bound to student 'y': unbind it first");
  Result c = std::move(b);
  CHECK(c.code() == Code::kBusy);
  CHECK(c.message() == "later");
  c = a;
  CHECK(c.is(Code::kConflict));
  c = Result();
  CHECK(c.ok());
  CHECK(c.message().empty());
  Result& self = a;
  a = self;  // self-assignment keeps it
  CHECK(a.is(Code::kConflict));
}

TEST_CASE("an error without a message reads as its category's name") {
  const Result r = Result::storage("");
  CHECK_FALSE(r.ok());
  CHECK(r.message().empty());
  CHECK(r.text() == "storage error");
}

TEST_CASE("every category has a name of its own") {
  std::set<std::string> names;
  for (Code c : {Code::kOk, Code::kInvalidArgument, Code::kNotFound, Code::kAlreadyExists,
                 Code::kConflict, Code::kPermissionDenied, Code::kReadOnly, Code::kBusy,
                 Code::kStorage, Code::kUnavailable}) {
    const std::string name(code_name(c));
    CHECK_FALSE(name.empty());
    CHECK(name != "unknown");
    names.insert(name);
  }
  CHECK(names.size() == 10);
  CHECK(code_name(Code::kPermissionDenied) == "permission denied");
}

TEST_CASE("a prefix says what the failure was about and keeps its category") {
  const Result r = Result::unavailable("cannot listen on /run/x.sock: Permission denied");
  const Result p = r.prefixed("VM lab-1: ");
  CHECK(p.is(Code::kUnavailable));
  CHECK(p.message() == "VM lab-1: cannot listen on /run/x.sock: Permission denied");
  CHECK(r.message() == "cannot listen on /run/x.sock: Permission denied");  // unchanged
  CHECK(Result().prefixed("VM lab-1: ").ok());                              // ok stays ok
  CHECK(Result::storage("").prefixed("db: ").message() == "db: storage error");
}
