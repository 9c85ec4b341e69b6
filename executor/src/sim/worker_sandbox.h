// The sim worker's sandbox. A worker runs plug-in code on pointers and sizes
// a guest chose, so a bug in a plug-in is a guest's way into the host: once
// its plug-ins are loaded, the worker keeps only what serving launches needs.
//
//   - no_new_privs: nothing it executes could gain privileges (and seccomp
//     needs it);
//   - started as root: an empty, deleted directory as its root, and the
//     unprivileged `vgpu` user (else `nobody`), without supplementary groups;
//   - started as another user (vgpud's unit runs it as `vgpu`): the empty
//     root when it was given CAP_SYS_CHROOT, then no capabilities at all;
//   - a seccomp filter that allows only the system calls serving needs
//     (memory, its sockets and signals, time, threads): opening files,
//     sockets, exec, fork and the rest fail with EPERM, and the first few
//     are logged by name.
//
// VGPU_WORKER_SANDBOX=off in the worker's environment skips it (debugging a
// plug-in under a tracer); the worker says so on stderr.
#pragma once

#include <string>

namespace vgpu::executor::sim {

// Enters the sandbox; false (and why) if any step fails: the worker must not
// serve then.
bool enter_sandbox(std::string* why);

}  // namespace vgpu::executor::sim
