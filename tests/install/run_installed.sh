# Sourced by the tests in tests/install (they define fail and T, and keep
# vgpud's log in $T/vgpud.log).
#   run_installed PREFIX VM PROGRAM: PROGRAM through PREFIX/bin/vgpu-run
# against the vgpud at $T/run must print PASS, having loaded
# PREFIX/lib/vgpu/libcuda.so.1 (the dynamic linker's own account).
run_installed() {
  local prefix=$1 vm=$2 program=$3 rc
  LD_DEBUG=libs "$prefix/bin/vgpu-run" --runtime-dir "$T/run" --vm "$vm" -- "$program" \
    >"$T/run.log" 2>"$T/ld.log"
  rc=$?
  cat "$T/run.log"
  [ $rc -eq 0 ] && grep -q '^PASS' "$T/run.log" ||
    { cat "$T/vgpud.log" >&2; fail "$(basename "$program") through the installed vgpu-run: exit $rc"; }
  grep -q "calling init: $prefix/lib/vgpu/libcuda.so.1" "$T/ld.log" ||
    fail "the program did not load the installed driver ($prefix/lib/vgpu/libcuda.so.1)"
}
