// The test links objects built by nvcc; their static constructors register
// fat binaries with the CUDA runtime. registration_stubs.cpp stands in for the
// runtime's registration entry points and records what they were given.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace vgpu::fatbin::test {

struct RegisteredVar {
  std::string name;
  size_t size = 0;
  bool constant = false;
};

struct Registration {
  const void* wrapper = nullptr;         // the __cudaRegisterFatBinary argument
  std::vector<std::string> functions;    // device names from __cudaRegisterFunction
  std::vector<RegisteredVar> variables;  // from __cudaRegisterVar
};

const std::vector<Registration>& registrations();

// The registration that registered `function`, or nullptr.
const Registration* registration_of(const std::string& function);

}  // namespace vgpu::fatbin::test
