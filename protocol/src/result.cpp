// The error type of module boundaries outside CUDA (result.h).
#include "vgpu/result.h"

namespace vgpu {

const std::string& Result::message() const {
  static const std::string* const kEmpty = new std::string;
  return rep_ ? rep_->message : *kEmpty;
}

std::string Result::text() const {
  if (rep_ && !rep_->message.empty()) return rep_->message;
  return std::string(code_name(code()));
}

Result Result::prefixed(std::string_view context) const {
  if (!rep_) return {};
  return {rep_->code, std::string(context) + text()};
}

std::string_view code_name(Result::Code code) {
  switch (code) {
    case Result::Code::kOk:
      return "ok";
    case Result::Code::kInvalidArgument:
      return "invalid argument";
    case Result::Code::kNotFound:
      return "not found";
    case Result::Code::kAlreadyExists:
      return "already exists";
    case Result::Code::kConflict:
      return "conflict";
    case Result::Code::kPermissionDenied:
      return "permission denied";
    case Result::Code::kReadOnly:
      return "read-only";
    case Result::Code::kBusy:
      return "busy";
    case Result::Code::kStorage:
      return "storage error";
    case Result::Code::kUnavailable:
      return "unavailable";
  }
  return "unknown";
}

}  // namespace vgpu
