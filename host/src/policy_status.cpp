// Result's categories as CUDA status values (policy_status.h).
#include "vgpu/host/policy_status.h"

namespace vgpu::host {

Status guest_status(const vgpu::Result& result) {
  using Code = vgpu::Result::Code;
  switch (result.code()) {
    case Code::kOk:
      return Status::kSuccess;
    case Code::kPermissionDenied:
    case Code::kReadOnly:
      return Status::kNotPermitted;
    case Code::kInvalidArgument:
    case Code::kNotFound:
    case Code::kAlreadyExists:
    case Code::kConflict:
      return Status::kInvalidValue;
    case Code::kBusy:
    case Code::kStorage:
    case Code::kUnavailable:
      return Status::kUnknown;
  }
  return Status::kUnknown;
}

}  // namespace vgpu::host
