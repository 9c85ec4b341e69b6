#!/usr/bin/env bash
# vgpu's Debian packages, built from this build (scripts/build-packages.sh
# --reuse), as a machine gets them:
#   1. cpack makes vgpu-host, vgpu-guest and vgpu-dkms, and lintian reports
#      no error or warning on any of them;
#   2. each holds what it should, where Debian puts it (commands, workers in
#      /usr/libexec/vgpu, the unit, the `vgpu` user's sysusers.d file,
#      conffiles, the guest driver, the DKMS tree);
#   3. installed with dpkg (as root, on a machine without vgpu's packages;
#      otherwise unpacked into a folder of the test's own, which the
#      commands find their files beside as well): the `vgpu` user exists, and
#      the installed vgpud, run as that user with only the capability its
#      unit gives it, serves a real CUDA program run through the installed
#      guest driver; root administers it with the installed vgpuctl; its sim
#      worker runs as `vgpu` with no capabilities left, in an empty root;
#   4. purged, nothing of them is left;
#   5. with --kernel-version, DKMS builds vgpu.ko from the vgpu-dkms tree.
# Every failure says what and exits 1.
#   package_test.sh --build DIR --sim-kernels SO --program PATH --busy PATH [--kernel-version V]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build= kernels= program= busy= kver=
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --sim-kernels) kernels=$2; shift 2 ;;
    --program) program=$2; shift 2 ;;
    --busy) busy=$2; shift 2 ;;
    --kernel-version) kver=$2; shift 2 ;;
    *) echo "package_test: unknown argument $1" >&2; exit 2 ;;
  esac
done
source "$(dirname "$0")/run_installed.sh"
fail() { echo "package_test: FAIL: $*" >&2; exit 1; }
T=$(mktemp -d /tmp/vgpu-package-XXXXXX)
chmod 755 "$T"  # the vgpu user reaches its runtime folder and plug-in here
vgpud_pid= installed=
cleanup() {
  [ -n "$vgpud_pid" ] && kill "$vgpud_pid" 2>/dev/null && wait "$vgpud_pid" 2>/dev/null
  [ -n "$installed" ] && dpkg --purge vgpu-guest vgpu-host >/dev/null 2>&1
  [ -n "${VGPU_TEST_KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT

# 1. The packages, and lintian.
"$here/../../scripts/build-packages.sh" --reuse --compression gzip --build-dir "$build" --out "$T/debs" >"$T/build.log" 2>&1 ||
  { cat "$T/build.log" >&2; fail "scripts/build-packages.sh --reuse"; }
cat "$T/build.log"
version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")/\1/p' "$build/CPackConfig.cmake")
[ -n "$version" ] || fail "no CPACK_PACKAGE_VERSION in $build/CPackConfig.cmake"
deb() { ls "$T"/debs/"$1"_*.deb 2>/dev/null | head -1; }
host=$(deb vgpu-host) guest=$(deb vgpu-guest) dkms=$(deb vgpu-dkms)
[ -f "$host" ] && [ -f "$guest" ] && [ -f "$dkms" ] || { ls -l "$T/debs" >&2; fail "not all three packages were made"; }
echo "package_test: lintian is clean on $(basename "$host"), $(basename "$guest"), $(basename "$dkms")"

# 2. Their contents.
has() {  # has DEB PATH...
  local list
  list=$(dpkg-deb -c "$1" | awk '{print $6}' | sed 's|^\./|/|')
  for f in "${@:2}"; do grep -qx -- "$f" <<<"$list" || fail "$(basename "$1") has no $f"; done
}
has "$host" /usr/bin/vgpud /usr/bin/vgpuctl /usr/libexec/vgpu/vgpu-sim-worker /usr/libexec/vgpu/vgpu-cuda-worker \
  /usr/lib/sysusers.d/vgpu.conf /etc/vgpu/vgpud.toml /usr/share/vgpu/grafana-dashboard.json \
  /usr/share/man/man1/vgpud.1.gz /usr/share/man/man1/vgpuctl.1.gz /usr/include/vgpu/sim_kernel.h \
  /usr/share/doc/vgpu-host/copyright /usr/share/doc/vgpu-host/changelog.Debian.gz
dpkg-deb -c "$host" | awk '{print $6}' | grep -q 'lib/systemd/system/vgpud.service$' || fail "vgpu-host has no systemd unit"
has "$guest" /usr/lib/vgpu/libcuda.so.1 /usr/lib/vgpu/libnvidia-ml.so.1 /usr/bin/vgpu-smi /usr/bin/vgpu-run \
  /etc/profile.d/vgpu.sh /usr/share/man/man1/vgpu-smi.1.gz
has "$dkms" "/usr/src/vgpu-$version/dkms.conf" "/usr/src/vgpu-$version/transport-kmod/kmod/Kbuild" \
  "/usr/src/vgpu-$version/protocol/include/vgpu/protocol/vm_region.h"
dpkg-deb -I "$host" conffiles | grep -qx /etc/vgpu/vgpud.toml || fail "vgpud.toml is not a conffile of vgpu-host"
dpkg-deb -I "$guest" conffiles | grep -qx /etc/profile.d/vgpu.sh || fail "the profile is not a conffile of vgpu-guest"
[ "$(dpkg-deb -f "$dkms" Architecture)" = all ] || fail "vgpu-dkms is not Architecture: all"
dpkg-deb -f "$dkms" Depends | grep -qw dkms || fail "vgpu-dkms does not depend on dkms"
dpkg-deb -f "$host" Depends | grep -q libsqlite3 || fail "vgpu-host's Depends lack its libraries (shlibdeps)"
# The packaged unit runs vgpud as the vgpu user, with one capability.
mkdir -p "$T/host-files"
dpkg-deb -x "$host" "$T/host-files"
unit=$(find "$T/host-files" -name vgpud.service)
grep -qx 'User=vgpu' "$unit" && grep -qx 'AmbientCapabilities=CAP_SYS_CHROOT' "$unit" ||
  fail "the packaged unit does not run vgpud as vgpu with CAP_SYS_CHROOT"
grep -q '^ExecStart=/usr/bin/vgpud ' "$unit" || fail "the packaged unit does not start /usr/bin/vgpud"
echo "package_test: each package holds what it should"

# 3. Installed (dpkg), or unpacked where dpkg may not be used.
root=
if [ "$(id -u)" -eq 0 ] && ! dpkg -s vgpu-host vgpu-guest >/dev/null 2>&1 && command -v adduser >/dev/null; then
  installed=1  # purged on every way out from here
  dpkg -i "$host" "$guest" >"$T/dpkg.log" 2>&1 || { cat "$T/dpkg.log" >&2; fail "dpkg -i vgpu-host vgpu-guest"; }
  getent passwd vgpu >/dev/null || fail "installing vgpu-host made no vgpu user"
  [ -f /etc/vgpu/vgpud.toml ] || fail "no /etc/vgpu/vgpud.toml after installing"
  echo "package_test: dpkg installed vgpu-host and vgpu-guest"
else
  root=$T/root
  mkdir -p "$root"
  dpkg-deb -x "$host" "$root" && dpkg-deb -x "$guest" "$root" || fail "dpkg-deb -x"
  echo "package_test: not root, or vgpu's packages are already installed here: unpacked into $root instead of dpkg -i"
fi

# The installed vgpud as its unit runs it: the vgpu user (nobody when not
# installed), with CAP_SYS_CHROOT as an ambient capability and no others.
# A copy of the plug-in where that user can read it (the build may be in a
# private home).
cp "$kernels" "$T/kernels.so" && chmod 644 "$T/kernels.so"
mkdir -p "$T/run" "$T/db"
as_user=vgpu
getent passwd vgpu >/dev/null || as_user=nobody
launch=()
if [ "$(id -u)" -eq 0 ]; then
  chown "$as_user" "$T/run" "$T/db"
  launch=(setpriv --reuid="$as_user" --regid="$(id -g "$as_user")" --init-groups
          --inh-caps=-all,+sys_chroot --ambient-caps=-all,+sys_chroot --bounding-set=-all,+sys_chroot
          --no-new-privs)
fi
env -u VGPU_CONFIG "${launch[@]}" "$root/usr/bin/vgpud" --backend sim --runtime-dir "$T/run" --db "$T/db/vgpu.db" \
  --libvirt none --sim-kernels "$T/kernels.so" --undumpable >"$T/vgpud.log" 2>&1 &
vgpud_pid=$!
for _ in $(seq 300); do grep -q "serving on" "$T/vgpud.log" && break; kill -0 "$vgpud_pid" 2>/dev/null || break; sleep 0.1; done
grep -q "serving on" "$T/vgpud.log" || { cat "$T/vgpud.log" >&2; fail "the installed vgpud did not start"; }
if [ -n "$installed" ]; then
  grep -q "configuration from /etc/vgpu/vgpud.toml" "$T/vgpud.log" ||
    { cat "$T/vgpud.log" >&2; fail "the installed vgpud did not read /etc/vgpu/vgpud.toml"; }
fi
grep -q "worker $root/usr/libexec/vgpu/vgpu-sim-worker" "$T/vgpud.log" ||
  { cat "$T/vgpud.log" >&2; fail "the installed vgpud does not use /usr/libexec/vgpu/vgpu-sim-worker"; }
if [ "$(id -u)" -eq 0 ]; then
  [ "$(ps -o user= -p "$vgpud_pid")" = "$as_user" ] || fail "vgpud does not run as $as_user"
  # --undumpable, as the unit starts it: its own user (its workers') cannot
  # read its memory or environment through /proc.
  ! setpriv --reuid="$as_user" --regid="$(id -g "$as_user")" --clear-groups \
      cat "/proc/$vgpud_pid/environ" >/dev/null 2>&1 ||
    fail "vgpud's own user can read /proc/$vgpud_pid/environ: --undumpable did not hold"
fi

# A program through the installed guest driver.
run_installed "$root/usr" packaged "$program"
# The sim worker of a context that is busy for seconds (busy: 8 kernels of
# 0.5 s queued when it prints "launched"): its user, capabilities and root.
if [ "$(id -u)" -eq 0 ]; then
  coproc BUSY { "$root/usr/bin/vgpu-run" --runtime-dir "$T/run" --vm busy -- "$busy" 500000 8 2>&1; }
  # Bash forgets a coprocess's pid and pipe once it ends: kept here.
  busy_pid=$BUSY_PID
  exec {busy_fd}<&"${BUSY[0]}"
  busy_out=
  while IFS= read -r line <&"$busy_fd"; do
    busy_out+="$line"$'\n'
    [ "$line" = launched ] && break
  done
  # The worker may still be starting: looked for until it has entered its
  # sandbox (seccomp on), while busy runs.
  w_uid= w_caps= w_root=
  while kill -0 "$busy_pid" 2>/dev/null && [ -z "$w_root" ]; do
    for w in $(pgrep -P "$vgpud_pid" -f vgpu-sim-worker); do
      [ "$(awk '/^Seccomp:/ {print $2}' "/proc/$w/status" 2>/dev/null)" = 2 ] || continue
      w_uid=$(awk '/^Uid:/ {print $2}' "/proc/$w/status")
      w_caps=$(awk '/^CapEff:/ {print $2}' "/proc/$w/status")
      w_root=$(readlink "/proc/$w/root")
    done
    [ -n "$w_root" ] || sleep 0.05
  done
  [ -n "$w_root" ] || { printf '%s' "$busy_out" >&2; fail "no sandboxed sim worker was seen while busy's kernels ran"; }
  busy_out+=$(cat <&"$busy_fd")
  exec {busy_fd}<&-
  wait "$busy_pid" || { printf '%s\n' "$busy_out" >&2; fail "busy through the installed vgpu-run failed"; }
  [ "$w_uid" = "$(id -u "$as_user")" ] || fail "the sim worker ran as uid $w_uid, not $as_user"
  [ "$w_caps" = 0000000000000000 ] || fail "the sim worker kept capabilities $w_caps"
  [ "$w_root" != / ] || fail "the sim worker's root is / (no empty root)"
  echo "package_test: the sim worker ran as $as_user, no capabilities, seccomp on, root $w_root"
fi
# Root administers the daemon that runs as vgpu.
"$root/usr/bin/vgpuctl" --runtime-dir "$T/run" course create pkg101 >"$T/ctl.log" 2>&1 &&
  "$root/usr/bin/vgpuctl" --runtime-dir "$T/run" --json status >>"$T/ctl.log" 2>&1 ||
  { cat "$T/ctl.log" >&2; fail "root cannot administer vgpud with the installed vgpuctl"; }
kill -TERM "$vgpud_pid"
wait "$vgpud_pid"
rc=$?
vgpud_pid=
[ $rc -eq 0 ] || { cat "$T/vgpud.log" >&2; fail "the installed vgpud did not stop cleanly: exit $rc"; }
echo "package_test: the installed vgpud (as $as_user), vgpu-run and driver served $(basename "$program")"

# 4. Purged: nothing of them left.
if [ -n "$installed" ]; then
  dpkg --purge vgpu-guest vgpu-host >"$T/purge.log" 2>&1 || { cat "$T/purge.log" >&2; fail "dpkg --purge"; }
  installed=
  for f in /usr/bin/vgpud /usr/libexec/vgpu /usr/lib/vgpu /etc/vgpu /etc/profile.d/vgpu.sh /var/lib/vgpu; do
    [ ! -e "$f" ] || fail "$f is left after dpkg --purge"
  done
  echo "package_test: purged, nothing is left"
fi

# 5. The DKMS package's tree builds the module (DKMS in trees of the test's
# own, as install_test does: this host's kernel is not the guest's).
if [ -n "$kver" ]; then
  command -v dkms >/dev/null || fail "dkms is missing (scripts/install-deps.sh)"
  mkdir -p "$T/dkms-files" "$T/dkms-tree"
  dpkg-deb -x "$dkms" "$T/dkms-files" || fail "dpkg-deb -x vgpu-dkms"
  dkms_here() { sign_file=/nonexistent dkms "$@" --sourcetree "$T/dkms-files/usr/src" --dkmstree "$T/dkms-tree"; }
  { dkms_here add -m vgpu -v "$version" && dkms_here build -m vgpu -v "$version" -k "$kver"; } \
    >"$T/dkms.log" 2>&1 || { cat "$T/dkms.log" >&2; fail "dkms build of vgpu-dkms's vgpu/$version for $kver"; }
  [ -f "$T/dkms-tree/vgpu/$version/$kver/$(uname -m)/module/vgpu.ko" ] || fail "dkms built no vgpu.ko"
  echo "package_test: DKMS builds vgpu.ko for Linux $kver from vgpu-dkms"
fi
echo "package_test: PASS"
