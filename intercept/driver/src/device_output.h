// What kernels print (device printf) reaches the program's stdout, and a
// failed device assert's message its stderr, at the points CUDA flushes them: cuCtxSynchronize, cuStreamSynchronize,
// cuEventSynchronize, a blocking copy, a module unload, and the program's
// exit. The host keeps each context's output apart (the daemon never logs
// it); the guest takes it from there.
//
// Only a launch of a kernel whose module calls printf or assert makes a take
// necessary: other programs pay nothing at their synchronising calls.
#pragma once

namespace vgpu::driver::device_output {

// A kernel that may print was launched.
void expect();
// A launch failed on the host for want of the kernel's code (the sim backend
// has no CPU implementation of it): the host's line naming the kernel waits
// in the assert stream, for the program's stderr.
void expect_report();
// Takes what the host holds and writes it to stdout, at most the context's
// cudaLimitPrintfFifoSize bytes of it (the rest is dropped, as a full FIFO
// drops it). Call with no lock held.
void flush();
// At exit: waits for the kernels still running, then flush().
void flush_at_exit();

}  // namespace vgpu::driver::device_output
