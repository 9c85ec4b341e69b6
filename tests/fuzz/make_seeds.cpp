// Writes the seed corpus for fuzz_calls: one valid request of every call, and a
// short session (malloc, copy in, memset, copy out, streams, events, double free).
// Run once by a developer; the output is committed under corpus/calls/.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "vgpu/protocol/codec.h"

using namespace vgpu::proto;

namespace {

// The first chunk is the data area's content (left empty here).
std::vector<uint8_t> framed(const std::vector<std::vector<uint8_t>>& messages) {
  std::vector<uint8_t> out = {0, 0};
  for (const auto& m : messages) {
    const uint16_t len = static_cast<uint16_t>(m.size());
    out.insert(out.end(), reinterpret_cast<const uint8_t*>(&len),
               reinterpret_cast<const uint8_t*>(&len) + 2);
    out.insert(out.end(), m.begin(), m.end());
  }
  return out;
}

template <class Request>
std::vector<uint8_t> message(const Request& req, std::vector<uint8_t> tail = {}) {
  std::vector<uint8_t> m(VGPU_MSG_HEADER_SIZE + sizeof(Request) + tail.size());
  encode_request(m, 1, 0, req, tail);
  return m;
}

void write(const std::string& dir, const std::string& name, const std::vector<uint8_t>& bytes) {
  FILE* f = std::fopen((dir + "/" + name).c_str(), "wb");
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
#define VGPU_CALL(id, Name, ...)                         \
  {                                                      \
    Name##Request req{};                                 \
    write(dir, #Name, framed({message(req)}));           \
  }
#include "vgpu/protocol/calls.def"
#undef VGPU_CALL
  // A session; the device pointer is what the sim backend hands out first.
  const uint64_t dptr = 0x200000000000ull;
  write(dir, "session",
        framed({message(MallocRequest{4096}), message(MemcpyHtoDRequest{dptr, 0, 256, 0}),
                message(MemsetRequest{dptr, 64, 0, 7, 0}), message(MemcpyDtoHRequest{dptr, 512, 256, 0}),
                message(StreamCreateRequest{0, 0}), message(EventCreateRequest{0, 0}),
                message(FunctionGetRequest{1}, {'_', 'Z', '1', 'k', 'v'}),
                message(FreeRequest{dptr}), message(FreeRequest{dptr})}));
  return 0;
}
