// The policy module's error type (result.h).
#include "vgpu/policy/result.h"

namespace vgpu::policy {

const std::string& Result::message() const {
  static const std::string* const kEmpty = new std::string;
  return rep_ ? rep_->message : *kEmpty;
}

std::string Result::text() const {
  if (rep_ && !rep_->message.empty()) return rep_->message;
  return std::string(code_name(code()));
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
  }
  return "unknown";
}

}  // namespace vgpu::policy
