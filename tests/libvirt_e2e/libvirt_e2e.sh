#!/usr/bin/env bash
# vgpu under a real libvirtd, end to end (docs/libvirt-e2e.md): a private
# libvirtd (private_libvirtd.sh), vgpud following its domains, a course and a
# student made with vgpuctl, a domain defined and given the GPU with `vgpuctl
# vm attach`, booted under TCG (the kmod test guest: CUDA programs through
# /dev/vgpu), powering itself off; then the host must show the session ended
# and nothing held, with vgpud still up. Then a domain attached while it runs
# (PCI hot-plug), and one whose vgpud is killed and started again, twice (the
# new vgpud plugs its device in again). Every process it starts goes with it.
#
#   libvirt_e2e.sh --vgpud PATH --vgpuctl PATH --sim-kernels PATH --image DIR
#
# VGPU_E2E_KEEP=1 keeps the temporary directory (logs, console) for a look.
# VGPU_E2E_KVM=1 runs the domains under KVM instead of TCG (the QEMU user
# needs /dev/kvm): QEMU then wires the guest's interrupts through irqfds, a
# path that replugging the device (phase 3) takes differently.
set -euo pipefail
export VGPU_CONFIG=${VGPU_CONFIG:-none}  # its vgpud is configured by its flags, not this host's vgpud.toml
here=$(cd "$(dirname "$0")" && pwd)
. "$here/private_libvirtd.sh"

vgpud="" vgpuctl="" kernels="" image=""
while [ $# -gt 0 ]; do
  case "$1" in
    --vgpud) vgpud=$2; shift 2 ;;
    --vgpuctl) vgpuctl=$2; shift 2 ;;
    --sim-kernels) kernels=$2; shift 2 ;;
    --image) image=$2; shift 2 ;;
    *) echo "libvirt_e2e: unknown argument $1" >&2; exit 2 ;;
  esac
done

domain=vgpu-e2e
boot_limit_s=150    # start to power-off: about 12 s here (TCG, two cores)
settle_limit_s=15   # a stop event reaching vgpud and the release after it
T="" vgpud_pid=""

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
t0=$(now)
step() { echo "libvirt_e2e: [$(since "$t0") s] $*"; }

show_logs() {
  [ -n "$T" ] || return 0
  local f
  for f in "$T/libvirt/console.log" "$T/libvirt/console-hotplug.log" \
           "$T/libvirt/console-restart.log" "$T"/vgpud*.log \
           "$T/libvirt/libvirtd.log" "$T/libvirt/cache/libvirt/qemu/log/"*.log; do
    [ -s "$f" ] || continue
    echo "---- $f (last 60 lines)"
    tail -n 60 "$f"
  done
}

fail() {
  echo "libvirt_e2e: FAIL: $*" >&2
  show_logs >&2
  exit 1
}

cleanup() {
  libvirtd_stop
  if [ -n "$vgpud_pid" ]; then
    kill "$vgpud_pid" 2>/dev/null || true
    wait "$vgpud_pid" 2>/dev/null || true
  fi
  if [ -n "$T" ]; then
    if [ "${VGPU_E2E_KEEP:-0}" = 1 ]; then echo "libvirt_e2e: kept $T"; else rm -rf "$T"; fi
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM  # through cleanup

# wait_until SECONDS COMMAND...: polls COMMAND every 0.2 s; false at the limit.
wait_until() {
  local end=$((SECONDS + $1))
  shift
  until "$@"; do
    [ "$SECONDS" -lt "$end" ] || return 1
    sleep 0.2
  done
}

# --- What it needs: missing pieces fail the test, they never skip it.
for cmd in libvirtd virsh qemu-system-x86_64 setpriv jq; do
  command -v "$cmd" >/dev/null || fail "needs $cmd (scripts/install-deps.sh installs it)"
done
for f in "$vgpud" "$vgpuctl" "$kernels" "$image/vmlinuz" "$image/initramfs.cpio.gz"; do
  [ -r "$f" ] || fail "missing $f (build the libvirt_e2e target first)"
done
if [ "$(id -u)" -eq 0 ]; then
  getent passwd nobody >/dev/null && getent group nogroup >/dev/null ||
    fail "needs the user nobody and the group nogroup (the private libvirtd runs as them)"
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/vgpu-libvirt-e2e.XXXXXX")
chmod 755 "$T"  # QEMU (VM_USER) reaches its image, console and vgpud's socket in here

step "starting a private libvirtd"
libvirtd_start "$T/libvirt"
step "libvirtd runs as $VM_USER at $LIBVIRT_URI"
mkdir "$T/image"
cp "$image/vmlinuz" "$image/initramfs.cpio.gz" "$T/image/"
chmod -R a+rX "$T/image"
"${AS_VM_USER[@]}" test -r "$T/image/initramfs.cpio.gz" ||
  fail "$VM_USER cannot read $T/image (TMPDIR=${TMPDIR:-/tmp} must be reachable by $VM_USER)"

step "starting vgpud (sim) following that libvirtd"
# QEMU connects to the VM's socket as VM_USER: its group may connect.
vm_group=$([ "$(id -u)" -eq 0 ] && echo "$VM_GROUP" || echo none)
mkdir "$T/vgpu"
chmod 755 "$T/vgpu"
vgpud_log=""
# start_vgpud LOG: vgpud on the test's runtime directory and database, up and
# connected to the private libvirtd.
start_vgpud() {
  vgpud_log="$T/$1"
  "$vgpud" --backend sim --runtime-dir "$T/vgpu" --db "$T/vgpu/vgpu.db" --sim-kernels "$kernels" \
    --libvirt "$LIBVIRT_URI" --vm-group "$vm_group" > "$vgpud_log" 2>&1 &
  vgpud_pid=$!
  wait_until 30 vgpud_up || fail "vgpud did not connect to libvirt"
}
vgpud_up() {
  kill -0 "$vgpud_pid" 2>/dev/null || fail "vgpud exited"
  grep -q "connected to libvirt at" "$vgpud_log"
}
# stop_vgpud: SIGTERM, and it must exit cleanly; each phase ends its own.
stop_vgpud() {
  kill "$vgpud_pid"
  local rc=0
  wait "$vgpud_pid" || rc=$?
  vgpud_pid=""
  [ "$rc" -eq 0 ] || fail "vgpud exited with $rc on SIGTERM"
}
start_vgpud vgpud.log

ctl() { "$vgpuctl" --runtime-dir "$T/vgpu" --libvirt "$LIBVIRT_URI" "$@"; }
ctl course create e2e >/dev/null || fail "vgpuctl course create"
ctl student add alice --course e2e >/dev/null || fail "vgpuctl student add"

accel=$([ "${VGPU_E2E_KVM:-0}" = 1 ] && echo kvm || echo qemu)
# define_domain NAME CONSOLE SCENARIO: the test domain, booting the guest
# scenario SCENARIO (tests/kmod/guest/guest-tests.sh).
define_domain() {
  sed -e "s|@NAME@|$1|" -e "s|@IMAGE@|$T/image|" -e "s|@CONSOLE@|$2|" \
      -e "s|vgpu.test=basic|vgpu.test=$3|" -e "s|<domain type='qemu'>|<domain type='$accel'>|" \
      -e "s|@QEMU@|$(command -v qemu-system-x86_64)|" "$here/domain.xml.in" > "$T/$1.xml"
  virsh -q -c "$LIBVIRT_URI" define "$T/$1.xml" >/dev/null || fail "virsh define $1"
}

step "defining domain $domain and attaching it to vgpu"
console="$T/libvirt/console.log"  # QEMU (VM_USER) creates it
define_domain "$domain" "$console" basic
ctl vm attach "$domain" --student alice || fail "vgpuctl vm attach"
socket="$T/vgpu/vms/$domain.sock"
xml=$(virsh -q -c "$LIBVIRT_URI" dumpxml --inactive "$domain")
grep -q "<model type='ivshmem-doorbell'/>" <<< "$xml" && grep -q "<server path='$socket'/>" <<< "$xml" ||
  fail "the domain has no ivshmem-doorbell device served at $socket:"$'\n'"$xml"
[ -S "$socket" ] || fail "vgpud does not serve $socket"
uuid=$(virsh -q -c "$LIBVIRT_URI" domuuid "$domain")
ctl --json vm list --interval 0 > "$T/vms.json" &&
  jq -e --arg d "$domain" --arg u "$uuid" \
    'any(.[]; .domain == $d and .uuid == $u and .attached and .student == "alice")' \
    "$T/vms.json" >/dev/null || fail "vm list does not show $domain attached: $(cat "$T/vms.json")"

step "starting $domain (QEMU, $([ "$accel" = kvm ] && echo KVM || echo TCG))"
started=$(now)
virsh -q -c "$LIBVIRT_URI" start "$domain" >/dev/null || fail "virsh start"
pidfile="$T/libvirt/run/libvirt/qemu/run/$domain.pid"
qemu_pid=$(qemu_of_pidfile "$pidfile") || fail "no QEMU in $pidfile"

session_open() {
  ctl --json vm sessions "$domain" |
    jq -e '[.[] | select(.ended_at == 0)] | length == 1' >/dev/null
}
wait_until 30 session_open || fail "vgpud opened no session for the running domain"

shut_off() { [ "$(virsh -q -c "$LIBVIRT_URI" domstate "$domain" 2>/dev/null)" = "shut off" ]; }
wait_until "$boot_limit_s" shut_off || fail "$domain did not power off within $boot_limit_s s"
boot_s=$(since "$started")
step "$domain ran and powered off in $boot_s s"

# --- The guest: it finished, every program passed, its kernel stayed healthy.
[ -r "$console" ] || fail "no console log $console"
tr -d '\r' < "$console" > "$T/console.txt"  # the serial console ends lines with CR LF
guest="$T/console.txt"
grep -q "^VGPU-DONE" "$guest" || fail "the guest did not finish its programs"
grep -q "^VGPU-RESULT vector_add PASS\$" "$guest" || fail "vector_add did not pass in the guest"
if grep "^VGPU-RESULT" "$guest" | grep -v " PASS\$"; then fail "a guest check failed"; fi
if grep "^VGPU-KERNEL" "$guest"; then fail "the guest kernel complained"; fi
step "guest: $(grep -c '^VGPU-RESULT .* PASS$' "$guest") checks passed;" \
     "booted in $(sed -n 's/^VGPU-BOOTED //p' "$guest");" \
     "round trip mean/min $(sed -n 's/^VGPU-RTT //p' "$guest") us"

# --- The host: QEMU gone, the session ended, nothing held, vgpud up.
! kill -0 "$qemu_pid" 2>/dev/null || fail "QEMU (pid $qemu_pid) still runs after power-off"
session_ended() {
  ctl --json vm sessions "$domain" > "$T/sessions.json" &&
    jq -e 'length == 1 and .[0].ended_at > 0' "$T/sessions.json" >/dev/null
}
wait_until "$settle_limit_s" session_ended ||
  fail "the session did not end: $(cat "$T/sessions.json")"
jq -e --arg u "$uuid" '.[0] | .end_reason == "shutdown" and .gpu_ns > 0 and .domain_uuid == $u' \
  "$T/sessions.json" >/dev/null ||
  fail "the session should end by shutdown, having used GPU time: $(cat "$T/sessions.json")"

# Nothing held: no context, allocation, channel or queued command, for the
# VM or the device; and calls did come through the transport.
released() {
  ctl --json status > "$T/status.json" && jq -e --arg vm "$domain" '
    .backend.contexts == 0 and .backend.device_bytes == 0 and .queued == 0 and
    .transport.channels == 0 and .transport.opened >= 1 and .transport.requests > 0 and
    all(.tenants[] | select(.vm == $vm);
        .channels == 0 and .contexts == 0 and .allocations == 0 and .bytes == 0 and
        .streams == 0 and .events == 0 and .modules == 0 and .queued == 0)' \
    "$T/status.json" >/dev/null
}
wait_until "$settle_limit_s" released || fail "vgpud still holds something: $(cat "$T/status.json")"
grep -q "vm $domain: domain $domain .* stopped (shutdown): session .* ended" "$T/vgpud.log" ||
  fail "vgpud did not log the domain's stop"
kill -0 "$vgpud_pid" 2>/dev/null || fail "vgpud is gone"
[ "$(jq .process.pid "$T/status.json")" = "$vgpud_pid" ] || fail "another vgpud answered"
[ -S "$socket" ] || fail "the VM's socket is gone (the next start needs it)"
ctl vm sessions

step "stopping vgpud"
stop_vgpud

# --- A running domain attached: the device is plugged in at once (PCI
# hot-plug), the guest's module, loaded before, takes it up, and a program
# runs without the domain restarting.
hot_domain=vgpu-e2e-hotplug
step "phase 2: $hot_domain attached while it runs"
start_vgpud vgpud-2.log
hot_console="$T/libvirt/console-hotplug.log"
define_domain "$hot_domain" "$hot_console" hotplug
virsh -q -c "$LIBVIRT_URI" start "$hot_domain" >/dev/null || fail "virsh start $hot_domain"
awaits() { grep -q "^VGPU-AWAIT-DEVICE" "$hot_console" 2>/dev/null; }
wait_until "$boot_limit_s" awaits || fail "$hot_domain did not boot"
ctl vm attach "$hot_domain" --student alice > "$T/attach.out" || fail "vgpuctl vm attach $hot_domain"
grep -q "the device was plugged in now" "$T/attach.out" ||
  fail "vgpuctl did not plug the device into the running domain: $(cat "$T/attach.out")"
hot_off() { [ "$(virsh -q -c "$LIBVIRT_URI" domstate "$hot_domain" 2>/dev/null)" = "shut off" ]; }
wait_until "$boot_limit_s" hot_off || fail "$hot_domain did not power off within $boot_limit_s s"
tr -d '\r' < "$hot_console" > "$T/console-hotplug.txt"
guest="$T/console-hotplug.txt"
grep -q "^VGPU-RESULT hotplug PASS\$" "$guest" || fail "the guest did not take up the plugged device"
grep -q "^VGPU-RESULT saxpy PASS\$" "$guest" || fail "saxpy did not pass on the plugged device"
if grep "^VGPU-RESULT" "$guest" | grep -v " PASS\$"; then fail "a guest check failed"; fi
if grep "^VGPU-KERNEL" "$guest"; then fail "the guest kernel complained"; fi
grep -q "domain $hot_domain .* stopped (shutdown)" "$vgpud_log" ||
  fail "$hot_domain did not shut down cleanly (QEMU crashed?)"
stop_vgpud

# --- vgpud killed under a running domain and started again: the domain's
# QEMU lost its ivshmem connection with the old vgpud for good, so the new
# one unplugs the device and plugs it in again; the guest's module takes up
# the new device, and a program runs without the domain restarting.
re_domain=vgpu-e2e-restart
step "phase 3: vgpud killed and started again (twice) under the running $re_domain"
start_vgpud vgpud-3.log
re_console="$T/libvirt/console-restart.log"
define_domain "$re_domain" "$re_console" restart
ctl vm attach "$re_domain" --student alice >/dev/null || fail "vgpuctl vm attach $re_domain"
virsh -q -c "$LIBVIRT_URI" start "$re_domain" >/dev/null || fail "virsh start $re_domain"
# seen N PATTERN: the restart guest's console shows PATTERN N times.
seen() { [ "$(grep -c "$2" "$re_console" 2>/dev/null)" -ge "$1" ]; }
for round in 1 2; do  # the second time, the device unplugged is a replugged one
  wait_until "$boot_limit_s" seen "$round" "^VGPU-HOLDING" ||
    fail "$re_domain did not run a program (round $round)"
  kill -KILL "$vgpud_pid"
  wait "$vgpud_pid" 2>/dev/null || true
  vgpud_pid=""
  wait_until 60 seen 1 "^VGPU-SILENT $round" ||
    fail "the guest did not see vgpud stop answering (round $round)"
  start_vgpud "vgpud-3-$round.log"
  replugged() { grep -q "vm $re_domain: domain $re_domain: the vgpu device was plugged in again" "$vgpud_log"; }
  wait_until 90 replugged || fail "the new vgpud did not plug the device into $re_domain again (round $round)"
  step "phase 3, round $round: $(sed -n "s/.*vm $re_domain: domain $re_domain: \(.*\)/\1/p" "$vgpud_log")"
done
re_off() { [ "$(virsh -q -c "$LIBVIRT_URI" domstate "$re_domain" 2>/dev/null)" = "shut off" ]; }
wait_until "$boot_limit_s" re_off || fail "$re_domain did not power off within $boot_limit_s s"
tr -d '\r' < "$re_console" > "$T/console-restart.txt"
guest="$T/console-restart.txt"
[ "$(grep -c "^VGPU-RESULT saxpy PASS\$" "$guest")" -eq 3 ] ||
  fail "saxpy should pass before the kills and after each new vgpud plugged the device in again"
grep -q "^VGPU-RESULT host-silent PASS\$" "$guest" || fail "the guest was not told vgpud stopped answering"
if grep "^VGPU-RESULT" "$guest" | grep -v " PASS\$"; then fail "a guest check failed"; fi
if grep "^VGPU-KERNEL" "$guest"; then fail "the guest kernel complained"; fi
grep -q "domain $re_domain .* stopped (shutdown)" "$vgpud_log" ||
  fail "$re_domain did not shut down cleanly under the new vgpud"
step "PASS ($domain: $boot_s s from start to power-off; $hot_domain: the device plugged in while it ran; $re_domain: plugged in again by a restarted vgpud, twice)"
