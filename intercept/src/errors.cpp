// Error names and descriptions, for every cudaError_t value of the toolkit.
#include <cuda_runtime_api.h>

namespace {

struct ErrorText {
  int value;
  const char* name;
  const char* description;
};

constexpr ErrorText kErrors[] = {
#include "error_strings.inc"
};

const ErrorText* find(cudaError_t e) {
  for (const auto& t : kErrors) {
    if (t.value == static_cast<int>(e)) return &t;
  }
  return nullptr;
}

}  // namespace

extern "C" {

const char* cudaGetErrorName(cudaError_t error) {
  const ErrorText* t = find(error);
  return t ? t->name : "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t error) {
  const ErrorText* t = find(error);
  return t ? t->description : "unrecognized error code";
}

}  // extern "C"
