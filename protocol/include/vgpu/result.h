// What a module returns across its boundary when something can fail: a
// category a caller can branch on, and a one-line message for a person. The
// contract for errors outside the guest's CUDA path: no function answers with a
// CUDA code or a bare `why` string, and no caller tells one error from another
// by its text. CUDA codes (vgpu::Status, protocol/status.h) are only for what
// CUDA speaks: the wire, the executor's work and the guest libraries.
//
// Modelled on LevelDB's Status: an ok Result holds nothing (one null
// pointer, no allocation), an error holds its code and message. The message
// is what vgpuctl or vgpud prints, unchanged ("permission denied: only admins
// add users"); the code says what kind of failure it was. Where a refusal must
// become a CUDA code (vgpud answering a guest), the caller maps the code in
// one place at that boundary (host/include/vgpu/host/policy_status.h), never the text.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace vgpu {

class [[nodiscard]] Result {
 public:
  // The categories. A message says which value or object; the code says
  // only which kind.
  enum class Code : uint8_t {
    kOk = 0,
    kInvalidArgument,   // a malformed or out-of-range value: a name, UUID, quota, time zone, roster
    kNotFound,          // the named user, course, student or VM does not exist
    kAlreadyExists,     // what was to be created exists already
    kConflict,          // the state forbids it (a course with students, a VM bound elsewhere)
    kPermissionDenied,  // the actor's role or courses do not allow it; an unregistered uid
    kReadOnly,          // the store was opened read-only (vgpuctl --db)
    kBusy,              // another connection held the write lock: nothing changed, try again
    kStorage,           // SQLite failed ("database error: ..."), or the file cannot be used
    kUnavailable,       // the system did not give what was needed: a socket, a directory, a
                        // thread, a device, a service (libvirt); the message says which and why
  };

  Result() noexcept = default;  // ok
  Result(const Result& other) : rep_(other.rep_ ? std::make_unique<Rep>(*other.rep_) : nullptr) {}
  Result& operator=(const Result& other) {
    if (this != &other) rep_ = other.rep_ ? std::make_unique<Rep>(*other.rep_) : nullptr;
    return *this;
  }
  Result(Result&&) noexcept = default;
  Result& operator=(Result&&) noexcept = default;
  ~Result() = default;

  static Result invalid_argument(std::string message) {
    return {Code::kInvalidArgument, std::move(message)};
  }
  static Result not_found(std::string message) { return {Code::kNotFound, std::move(message)}; }
  static Result already_exists(std::string message) {
    return {Code::kAlreadyExists, std::move(message)};
  }
  static Result conflict(std::string message) { return {Code::kConflict, std::move(message)}; }
  static Result permission_denied(std::string message) {
    return {Code::kPermissionDenied, std::move(message)};
  }
  static Result read_only(std::string message) { return {Code::kReadOnly, std::move(message)}; }
  static Result busy(std::string message) { return {Code::kBusy, std::move(message)}; }
  static Result storage(std::string message) { return {Code::kStorage, std::move(message)}; }
  static Result unavailable(std::string message) {
    return {Code::kUnavailable, std::move(message)};
  }

  bool ok() const { return rep_ == nullptr; }
  Code code() const { return rep_ ? rep_->code : Code::kOk; }
  bool is(Code c) const { return code() == c; }
  // The one-line message; empty when ok.
  const std::string& message() const;
  // The message, or the code's name if the message is empty ("ok" when ok).
  std::string text() const;
  // The same category with `context` before the message ("VM lab-1: " +
  // "..."), for a caller that knows what the failure was about; ok stays ok.
  Result prefixed(std::string_view context) const;

 private:
  struct Rep {
    Code code;
    std::string message;
  };
  Result(Code code, std::string message)
      : rep_(std::make_unique<Rep>(Rep{code, std::move(message)})) {}

  std::unique_ptr<Rep> rep_;  // null: ok
};

// "ok", "invalid argument", "not found", ... (for logs and tests).
std::string_view code_name(Result::Code code);

}  // namespace vgpu
