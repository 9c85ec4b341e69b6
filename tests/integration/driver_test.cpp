// NVIDIA's own runtime and the driver API over vgpu's guest libcuda.so.1:
// programs built as nvcc builds them by default (the static runtime), the
// driver-API program with each kind of module image, and the shim beside it.
#include <catch2/catch.hpp>

#include "harness.h"
#include "require_pass.h"

using namespace vgpu::test;

TEST_CASE("programs built with nvcc's default static runtime run unmodified") {
  Daemon d;
  for (const char* name : {"saxpy", "vector_add", "device_query", "struct_param", "constant_memory",
                           "streams_events", "pinned_memory", "unsupported_call"}) {
    SECTION(name) {
      const RunResult r = d.run("alice", std::string("static/") + name);
      require_pass(r, name);
      // Start-up asks the driver nothing vgpu refuses (the private tables, the
      // entry points): only unsupported_call's own call is refused.
      if (std::string(name) != "unsupported_call")
        CHECK_THAT(r.output, !Catch::Contains("not supported by vgpu"));
      CHECK_THAT(r.output, !Catch::Contains("is unknown to vgpu"));
    }
  }
}

TEST_CASE("a static-runtime program's errors come back as CUDA errors and it goes on") {
  Daemon d;
  const RunResult r = d.run("alice", "static/error_paths",
                            on_sim() ? std::vector<std::string>{"--sim"} : std::vector<std::string>{});
  require_pass(r, "error_paths");
  CHECK_THAT(r.output, Catch::Contains("second cudaFree of the same pointer -> cudaErrorInvalidValue"));
  CHECK_THAT(r.output, Catch::Contains("into a 4096-byte allocation -> cudaErrorInvalidValue"));
}

TEST_CASE("the driver API program runs with a cubin, a fat binary and PTX") {
  Daemon d;
  for (const char* kind : {"cubin", "fatbin", "ptx"}) {
    SECTION(kind) {
      const RunResult r =
          d.run("alice", "driver_api", {program_path(std::string("driver_kernels.") + kind)});
      require_pass(r, "driver_api");
      CHECK_THAT(r.output, Catch::Contains("ok   launch with kernelParams"));
      CHECK_THAT(r.output, Catch::Contains("ok   launch with extra (a packed buffer)"));
    }
  }
}

TEST_CASE("destroying a created context frees what it made, and only that") {
  Daemon d;
  const RunResult r = d.run("alice", "driver_contexts", {program_path("driver_kernels.fatbin")});
  require_pass(r, "driver_contexts");
  CHECK_THAT(r.output, Catch::Contains("ok   6 rounds of 40% of the device's memory"));
  CHECK_THAT(r.output, Catch::Contains("ok   the primary context's allocation is untouched"));
}

TEST_CASE("virtual memory management: reserve map access launch unmap and free as vectorAddMMAP does") {
  Daemon d;
  const RunResult r = d.run("alice", "virtual_memory", {program_path("driver_kernels.fatbin")});
  require_pass(r, "virtual_memory");
  CHECK_THAT(r.output, Catch::Contains("ok   an unmapped allocation kept its bytes"));
  CHECK_THAT(r.output, Catch::Contains("ok   every reserved range was given back"));
  // Each refusal names what vgpu does not do.
  CHECK_THAT(r.output, Catch::Contains("one virtual memory allocation mapped at two addresses"));
  CHECK_THAT(r.output, Catch::Contains("read-only or revoked access to virtual memory"));
}

TEST_CASE("a file that is not a module image is refused by cuModuleLoad") {
  Daemon d;
  const RunResult r = d.run("alice", "driver_api", {program_path("saxpy") + ".no-such-file"});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("CUDA_ERROR_FILE_NOT_FOUND"));
  const RunResult junk = d.run("alice", "driver_api", {"/etc/hostname"});
  CHECK(junk.exit_code == 1);
  CHECK_THAT(junk.output, Catch::Contains("CUDA_ERROR_INVALID_IMAGE"));
}

TEST_CASE("the runtime shim still serves a shared-runtime program") {
  Daemon d;
  require_pass(d.start_shim("alice", "saxpy")->wait(std::chrono::seconds(120)), "saxpy");
}

TEST_CASE("an NVRTC program compiles a kernel in the guest and runs it, as PTX and as a cubin") {
  Daemon d;
  const RunResult r = d.run("alice", "nvrtc_program");
  require_pass(r, "nvrtc_program");
  CHECK_THAT(r.output, Catch::Contains("ok   the kernel from PTX computed all"));
  // A cubin for the device's compute capability, as NVIDIA's NVRTC samples
  // load: on sim it runs through the PTX NVRTC kept.
  CHECK_THAT(r.output, Catch::Contains("ok   the kernel from the cubin computed all"));
}

TEST_CASE("cuBLAS runs on vgpu's driver; on sim its kernel is named as missing") {
  Daemon d;
  const RunResult r = d.run("alice", "cublas_sgemm");
  INFO(r.output);
  REQUIRE_FALSE(r.timed_out);
  if (!on_sim()) {
    require_pass(r, "cublas_sgemm");
    return;
  }
  // cuBLAS initialises (its private tables, its 64 MiB workspace) and
  // launches; the sim has no CPU implementation of its GEMM kernel.
  CHECK_THAT(r.output, Catch::Contains("ok   cublasCreate"));
  CHECK_THAT(r.output, Catch::Contains("ok   cublasSgemm launched (64x64"));
  // The split-k path asks the private table 21318c60 for slots 51 and 39.
  CHECK_THAT(r.output, Catch::Contains("ok   cublasSgemm launched (275x275"));
  // cuBLASLt's tensor-core heuristics call the compile cache table's slot 4
  // (it crashed on a missing table); then its Hopper kernels launch in
  // clusters, which are refused by name.
  CHECK_THAT(r.output, Catch::Contains("note cublasGemmEx (half inputs, 128x128) returned status"));
  CHECK_THAT(r.output, !Catch::Contains("private table"));
  CHECK_THAT(r.output, !Catch::Contains("unknown to vgpu"));
  CHECK_THAT(r.output, Catch::Contains("cudaErrorNoKernelImageForDevice"));
  CHECK(r.exit_code == 1);
  CHECK_THAT(d.log(), Catch::Contains("no CPU implementation of kernel sm80_xmma_gemm"));
  // The program's own stderr names the kernel, not only the daemon's log.
  CHECK_THAT(r.output, Catch::Contains("vgpu: kernel sm80_xmma_gemm"));
  CHECK_THAT(r.output, Catch::Contains("has no CPU implementation on this host's sim backend"));
  // cuBLAS's GEMMs ship as cubins only: the message says there was no PTX.
  CHECK_THAT(r.output, Catch::Contains("its module holds none, only cubins"));
}

TEST_CASE("cuFFT runs on vgpu's driver; on sim its kernel runs from its PTX") {
  Daemon d;
  const RunResult r = d.run("alice", "cufft_c2c");
  // cuFFT plans (it walks each module's functions through a private table,
  // 6e163fbe slot 7) and launches; on sim no plug-in implements its FFT
  // kernel, so the interpreter runs the PTX cuFFT ships, and the transform
  // and its inverse give back the input.
  require_pass(r, "cufft_c2c");
  CHECK_THAT(r.output, Catch::Contains("ok   forward and inverse give back all 256 points"));
  CHECK_THAT(r.output, !Catch::Contains("is unknown to vgpu"));
  if (on_sim()) CHECK_THAT(d.log(), !Catch::Contains("no CPU implementation"));
}

TEST_CASE("cuRAND and cuSPARSE run on vgpu's driver; on sim their kernels run on the interpreter") {
  Daemon d;
  // cuRAND ships PTX for its generators, so with no plug-in the sim's
  // interpreter runs them and the numbers are real.
  SECTION("curand") {
    const RunResult r = d.run("vm-curand", "cuda_libraries", {"curand"});
    require_pass(r, "cuda_libraries");
    CHECK_THAT(r.output, Catch::Contains("ok   all 1024 values in (0, 1]"));
  }
  // cuSPARSE's only PTX is compute_120's, and it tunes SpMV's launch by the
  // ptxVersion the kernel reports: 512 threads for sm_90's cubin, 128 for
  // that PTX, built for at most 128. The sim reports the PTX it runs, so the
  // launch fits the code (it trapped when the sim reported 90).
  SECTION("cusparse") {
    const RunResult r = d.run("vm-cusparse", "cuda_libraries", {"cusparse"});
    require_pass(r, "cuda_libraries");
    CHECK_THAT(r.output, Catch::Contains("ok   y = A x"));
  }
  if (on_sim()) CHECK_THAT(d.log(), !Catch::Contains("no CPU implementation"));
}

TEST_CASE("cuSOLVER runs on vgpu's driver; on sim its Cholesky runs on the interpreter") {
  Daemon d;
  // The library starts (its private tables, its handles, its workspace) and
  // factors; on sim its getrf kernels, which stage tiles with cp.async, run
  // from their PTX, and the factor is checked on the host.
  const RunResult r = d.run("vm-cusolver", "cuda_libraries", {"cusolver"});
  require_pass(r, "cuda_libraries");
  CHECK_THAT(r.output, Catch::Contains("ok   the matrix is positive definite (info 0)"));
  CHECK_THAT(r.output, Catch::Contains("ok   L L^T = A"));
  CHECK_THAT(r.output, !Catch::Contains("is unknown to vgpu"));
  CHECK_THAT(r.output, !Catch::Contains("not supported by vgpu"));
  if (on_sim()) CHECK_THAT(d.log(), !Catch::Contains("no CPU implementation"));
}
