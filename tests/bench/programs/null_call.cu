// null_call [CALLS]: the cheapest calls that cross to vgpud and back, timed
// one by one after a warm-up of CALLS/10: cudaGetDeviceCount (answered by
// the call handler from the device table) and cudaStreamQuery on the default
// stream (answered by the backend from the caller's context, idle here).
// Prints null_call_ns_{median,p99,min} and stream_query_ns_{...}.
#include "bench_program.h"

int main(int argc, char** argv) {
  const long calls = bp::arg(argc, argv, 1, 200000);
  int count = 0;
  BP_OK(cudaGetDeviceCount(&count));  // connects
  std::vector<double> samples;
  samples.reserve(static_cast<size_t>(calls));
  for (long i = 0; i < calls / 10; ++i) BP_OK(cudaGetDeviceCount(&count));
  for (long i = 0; i < calls; ++i) {
    const double t0 = bp::now_ns();
    BP_OK(cudaGetDeviceCount(&count));
    samples.push_back(bp::now_ns() - t0);
  }
  bp::results("null_call_ns", samples);
  samples.clear();
  for (long i = 0; i < calls / 10; ++i) BP_OK(cudaStreamQuery(0));
  for (long i = 0; i < calls; ++i) {
    const double t0 = bp::now_ns();
    BP_OK(cudaStreamQuery(0));
    samples.push_back(bp::now_ns() - t0);
  }
  bp::results("stream_query_ns", samples);
  return 0;
}
