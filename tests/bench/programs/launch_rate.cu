// launch_rate [LAUNCHES] [REPS]: asynchronous launches of an empty kernel.
// Each repetition issues LAUNCHES launches of empty<<<1, 1>>>() on the
// default stream, then one cudaDeviceSynchronize:
//   issue rate      LAUNCHES / (time until the last launch call returned)
//   end to end      LAUNCHES / (time until the synchronize returned)
// One repetition of LAUNCHES/10 warms up first. Prints the median (and the
// best) of each over REPS repetitions, in launches per second.
#include "bench_program.h"

__global__ void empty() {}

int main(int argc, char** argv) {
  const long launches = bp::arg(argc, argv, 1, 1000000);
  const long reps = bp::arg(argc, argv, 2, 5);
  std::vector<double> issue, e2e;
  for (long r = -1; r < reps; ++r) {
    const long n = r < 0 ? launches / 10 : launches;
    const double t0 = bp::now_ns();
    for (long i = 0; i < n; ++i) empty<<<1, 1>>>();
    const double t1 = bp::now_ns();
    BP_OK(cudaGetLastError());
    BP_OK(cudaDeviceSynchronize());
    const double t2 = bp::now_ns();
    if (r < 0) continue;
    issue.push_back(static_cast<double>(n) * 1e9 / (t1 - t0));
    e2e.push_back(static_cast<double>(n) * 1e9 / (t2 - t0));
    std::printf("rep %ld: issue %.0f/s, end to end %.0f/s\n", r, issue.back(), e2e.back());
  }
  std::sort(issue.begin(), issue.end());
  std::sort(e2e.begin(), e2e.end());
  bp::result("issue_per_s_median", issue[issue.size() / 2]);
  bp::result("issue_per_s_best", issue.back());
  bp::result("e2e_per_s_median", e2e[e2e.size() / 2]);
  bp::result("e2e_per_s_best", e2e.back());
  return 0;
}
