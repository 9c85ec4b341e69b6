#!/usr/bin/env bash
# What `cmake --install` puts on a host works from where it lands:
#   1. the files are there (commands, workers in libexec/vgpu, runtime
#      library, plug-in ABI, systemd unit, the vgpu user's sysusers.d file,
#      guest module sources in src/vgpu-VERSION);
#   2. the installed vgpud (sim backend) reads the installed configuration
#      file by default (PREFIX/etc/vgpu), starts the installed worker, and a
#      real CUDA program run through the installed vgpu-run loads the
#      installed guest driver (libcuda.so.1) and passes;
#   3. the installed unit passes `systemd-analyze verify` and names the
#      installed vgpud;
#   4. with --kernel-version, the installed guest module sources build, with
#      DKMS and by hand.
# Every failure says what and exits 1.
#   install_test.sh --build DIR --sim-kernels SO --program PATH [--kernel-version V]
set -uo pipefail
build= kernels= program= kver=
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --sim-kernels) kernels=$2; shift 2 ;;
    --program) program=$2; shift 2 ;;
    --kernel-version) kver=$2; shift 2 ;;
    *) echo "install_test: unknown argument $1" >&2; exit 2 ;;
  esac
done
source "$(dirname "$0")/run_installed.sh"
fail() { echo "install_test: FAIL: $*" >&2; exit 1; }
T=$(mktemp -d /tmp/vgpu-install-XXXXXX)
vgpud_pid=
cleanup() {
  [ -n "$vgpud_pid" ] && kill "$vgpud_pid" 2>/dev/null && wait "$vgpud_pid" 2>/dev/null
  [ -n "${VGPU_TEST_KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
P=$T/prefix

# 1. The install and its files.
cmake --install "$build" --prefix "$P" >"$T/install.log" 2>&1 ||
  { cat "$T/install.log" >&2; fail "cmake --install failed"; }
version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")/\1/p' "$build/CPackConfig.cmake")
[ -n "$version" ] || fail "no CPACK_PACKAGE_VERSION in $build/CPackConfig.cmake"
guest=src/vgpu-$version
for f in etc/vgpu/vgpud.toml share/vgpu/vgpud.toml.example bin/vgpud bin/vgpuctl bin/vgpu-run bin/vgpu-smi \
         libexec/vgpu/vgpu-sim-worker libexec/vgpu/vgpu-cuda-worker lib/sysusers.d/vgpu.conf etc/profile.d/vgpu.sh \
         lib/vgpu/libcuda.so.1 lib/vgpu/libnvidia-ml.so.1 lib/vgpu/shim/libcudart.so.13 include/vgpu/sim_kernel.h lib/systemd/system/vgpud.service share/vgpu/grafana-dashboard.json \
         $guest/dkms.conf $guest/transport-kmod/kmod/Kbuild $guest/transport-kmod/kmod/vgpu_main.c \
         $guest/protocol/include/vgpu/protocol/vm_region.h \
         $guest/transport-kmod/include/vgpu/transport/vgpu_dev.h; do
  [ -e "$P/$f" ] || fail "$f was not installed"
done
[ -x "$P/bin/vgpud" ] || fail "bin/vgpud is not executable"
[ ! -e "$P/bin/vgpu-sim-worker" ] || fail "the sim worker is in bin/, not libexec/vgpu/"
[ ! -e "$P/share/doc/vgpu-host" ] || fail "the packages' share/doc files are installed without packaging"
echo "install_test: installed into $P"
# The installed configuration names every flag of the installed vgpud.
for flag in $("$P/bin/vgpud" --help | sed -n 's/^ *\(-[a-z],\)\?--\([a-z][a-z0-9-]*\).*/\2/p'); do
  case $flag in help | version | config) continue ;; esac
  grep -q "^# $flag = " "$P/etc/vgpu/vgpud.toml" || fail "etc/vgpu/vgpud.toml does not show '$flag'"
done

# 2. The installed programs serve a CUDA program. A database of the test's
# own: root's default, /var/lib/vgpu, is not the test's to touch.
mkdir -p "$T/run"
env -u VGPU_CONFIG "$P/bin/vgpud" --backend sim --runtime-dir "$T/run" \
  --db "$T/vgpu.db" --libvirt none --sim-kernels "$kernels" >"$T/vgpud.log" 2>&1 &
vgpud_pid=$!
for _ in $(seq 200); do [ -S "$T/run/vgpud.sock" ] && break; sleep 0.1; done
[ -S "$T/run/vgpud.sock" ] || { cat "$T/vgpud.log" >&2; fail "the installed vgpud did not start"; }
grep -q "configuration from $P/etc/vgpu/vgpud.toml" "$T/vgpud.log" ||
  { cat "$T/vgpud.log" >&2; fail "the installed vgpud did not read $P/etc/vgpu/vgpud.toml by default"; }
run_installed "$P" installed "$program"
# The contexts' worker is the installed one, next to the installed vgpud.
grep -q "worker $P/libexec/vgpu/vgpu-sim-worker\$" "$T/vgpud.log" ||
  { cat "$T/vgpud.log" >&2; fail "the installed vgpud does not use the installed vgpu-sim-worker"; }
"$P/bin/vgpuctl" --runtime-dir "$T/run" --json status >"$T/status.json" 2>&1 ||
  { cat "$T/status.json" >&2; fail "the installed vgpuctl cannot read the daemon's status"; }
kill -TERM "$vgpud_pid"
wait "$vgpud_pid"
rc=$?
vgpud_pid=
[ $rc -eq 0 ] || { cat "$T/vgpud.log" >&2; fail "the installed vgpud did not stop cleanly: exit $rc"; }
echo "install_test: the installed vgpud, worker, vgpu-run and driver served $(basename "$program")"

# 3. The systemd unit.
unit=$P/lib/systemd/system/vgpud.service
grep -q "^ExecStart=$P/bin/vgpud " "$unit" || fail "the unit does not start $P/bin/vgpud"
command -v systemd-analyze >/dev/null || fail "systemd-analyze is missing (scripts/install-deps.sh)"
systemd-analyze verify "$unit" >"$T/verify.log" 2>&1 ||
  { cat "$T/verify.log" >&2; fail "systemd-analyze verify $unit"; }
echo "install_test: the unit passes systemd-analyze verify"
grep -q '^Type=notify$' "$unit" && grep -q '^WatchdogSec=' "$unit" ||
  fail "the unit is not Type=notify with a watchdog"
grep -qx 'User=vgpu' "$unit" && grep -qx 'CapabilityBoundingSet=CAP_SYS_CHROOT' "$unit" ||
  fail "the unit does not run vgpud as the vgpu user with only CAP_SYS_CHROOT"
grep -q '^u vgpu ' "$P/lib/sysusers.d/vgpu.conf" || fail "lib/sysusers.d/vgpu.conf does not make the vgpu user"
# Sandboxed: systemd's exposure score (0 safest, 10 none) at most 3.0 (2.4
# when written, vgpud as the vgpu user: docs/robustness.md).
systemd-analyze security --offline=true --threshold=30 "$unit" >"$T/security.log" 2>&1 ||
  { cat "$T/security.log" >&2; fail "systemd-analyze security: the unit's exposure is above 3.0"; }
echo "install_test: the unit is sandboxed: $(grep -o 'Overall exposure level.*' "$T/security.log")"

# 3b. Man pages and bash completion, both from the programs' own --help.
for program in vgpud vgpuctl vgpu-run vgpu-smi; do
  page=$P/share/man/man1/$program.1.gz
  [ -f "$page" ] || fail "no man page $page"
  zgrep -q "^\.TH ${program^^} " "$page" || fail "$page has no .TH line"
  zgrep -q '\\-\\-help' "$page" || fail "$page lists no options"
  [ -f "$P/share/bash-completion/completions/$program" ] || fail "no bash completion for $program"
done
zgrep -q '^\.SS "vgpuctl quota set"' "$P/share/man/man1/vgpuctl.1.gz" ||
  fail "vgpuctl.1 has no section for 'vgpuctl quota set'"
zgrep -q -- '--gpu-time TEXT:BUDGET/PERIOD' "$P/share/man/man1/vgpuctl.1.gz" ||
  fail "vgpuctl.1 does not describe --gpu-time"
completions=$(PATH="$P/bin:$PATH" bash -c '
  source "$1"
  try() { COMP_WORDS=("${@:2}"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _vgpu_complete
          echo "$1: ${COMPREPLY[*]}"; }
  try sub vgpuctl qu
  try subsub vgpuctl --json quota s
  try option vgpuctl quota set alice --gp
  try choice vgpuctl quota set --on-exhaust ""
  try daemon vgpud --backend ""
  try program vgpu-run --vm a -- prog --' _ "$P/share/bash-completion/completions/vgpuctl")
for want in "sub: quota" "subsub: set show" "option: --gpu-time" "choice: reject wait best-effort" \
            "daemon: sim cuda auto" "program: "; do
  grep -qx -- "$want" <<<"$completions" || { echo "$completions" >&2; fail "completion: expected '$want'"; }
done
echo "install_test: man pages for vgpud, vgpuctl and vgpu-run; bash completion from their --help"

# 4. The guest module from the installed sources: through DKMS (as a guest
# installs it, in trees of this test's own; sign_file pointing nowhere keeps
# DKMS from making a module signing key on this host), then by hand.
if [ -n "$kver" ]; then
  command -v dkms >/dev/null || fail "dkms is missing (scripts/install-deps.sh)"
  grep -qx "PACKAGE_VERSION=\"$version\"" "$P/$guest/dkms.conf" || fail "$guest/dkms.conf is not version $version"
  mkdir -p "$T/dkms-src" "$T/dkms-tree"
  cp -r "$P/$guest" "$T/dkms-src/vgpu-$version"
  dkms_in_tmp() { sign_file=/nonexistent dkms "$@" --sourcetree "$T/dkms-src" --dkmstree "$T/dkms-tree"; }
  { dkms_in_tmp add -m vgpu -v "$version" && dkms_in_tmp build -m vgpu -v "$version" -k "$kver"; } \
    >"$T/dkms.log" 2>&1 || { cat "$T/dkms.log" >&2; fail "dkms build of vgpu/$version for $kver"; }
  ko=$T/dkms-tree/vgpu/$version/$kver/$(uname -m)/module/vgpu.ko
  [ -f "$ko" ] || { cat "$T/dkms.log" >&2; fail "dkms built no vgpu.ko"; }
  modinfo -F alias "$ko" | grep -qi 'v00001AF4d00001110' ||
    fail "the module dkms built does not claim the ivshmem device"
  echo "install_test: dkms builds vgpu/$version for Linux $kver from the installed sources"
  make -s -C "$P/$guest/transport-kmod/kmod" KVER="$kver" >"$T/kmod.log" 2>&1 ||
    { cat "$T/kmod.log" >&2; fail "the installed guest module sources do not build for $kver"; }
  [ -f "$P/$guest/transport-kmod/kmod/vgpu.ko" ] || fail "no vgpu.ko from the installed sources"
  echo "install_test: the installed guest module sources build vgpu.ko for Linux $kver"
else
  echo "install_test: no kernel headers here: the guest module sources were not built (as in the build)"
fi
echo "install_test: PASS"
