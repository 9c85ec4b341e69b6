# shellcheck shell=bash
# A private libvirtd for the e2e test (sourced by libvirt_e2e.sh): the
# qemu:///session daemon of an unprivileged user, with its configuration,
# socket, domain definitions and logs all under one directory, so the host's
# libvirt is neither needed nor touched. As root the daemon runs as `nobody`:
# root's libvirtd is always the privileged one, whose paths (/etc/libvirt,
# /run/libvirt) are fixed at build time.
#
#   libvirtd_start DIR   sets LIBVIRT_URI, LIBVIRTD_PID, VM_USER, VM_GROUP and
#                        AS_VM_USER (the command prefix that runs as VM_USER)
#   libvirtd_stop        destroys the daemon's QEMUs, then stops it
# Needs fail() from the caller.

LIBVIRT_DIR="" LIBVIRTD_PID="" LIBVIRT_URI=""

libvirtd_start() {
  LIBVIRT_DIR=$1
  if [ "$(id -u)" -eq 0 ]; then
    VM_USER=nobody VM_GROUP=nogroup
    AS_VM_USER=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
  else
    VM_USER=$(id -un) VM_GROUP=$(id -gn)
    AS_VM_USER=()
  fi
  local d=$LIBVIRT_DIR
  mkdir -p "$d/config/libvirt" "$d/cache" "$d/data" "$d/run"
  # QEMU's output to a file: no virtlogd is spawned (and left behind).
  echo 'stdio_handler = "file"' > "$d/config/libvirt/qemu.conf"
  echo 'log_outputs = "3:stderr"' > "$d/config/libvirt/libvirtd.conf"  # warnings and errors
  chmod 700 "$d/run"
  [ "$(id -u)" -ne 0 ] || chown -R "$VM_USER:$VM_GROUP" "$d"
  (cd "$d" && exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$d" \
     XDG_CONFIG_HOME="$d/config" XDG_CACHE_HOME="$d/cache" XDG_DATA_HOME="$d/data" \
     XDG_RUNTIME_DIR="$d/run" "${AS_VM_USER[@]}" libvirtd) > "$d/libvirtd.log" 2>&1 &
  LIBVIRTD_PID=$!
  # ?socket=: this daemon's socket, not the caller's own session daemon.
  LIBVIRT_URI="qemu:///session?socket=$d/run/libvirt/libvirt-sock"
  for _ in $(seq 1 150); do
    virsh -q -c "$LIBVIRT_URI" version >/dev/null 2>&1 && return 0
    kill -0 "$LIBVIRTD_PID" 2>/dev/null || break
    sleep 0.2
  done
  virsh -q -c "$LIBVIRT_URI" version 2>&1 | sed 's/^/  virsh: /' >&2 || true
  fail "the private libvirtd did not come up at $LIBVIRT_URI"
}

# The pid in a domain's pid file, if that process is still one of its QEMUs.
qemu_of_pidfile() {
  local pid
  pid=$(cat "$1" 2>/dev/null) || return 1
  [ -n "$pid" ] && tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q qemu-system &&
    echo "$pid"
}

libvirtd_stop() {
  [ -n "$LIBVIRTD_PID" ] || return 0
  # libvirtd leaves its domains running when it stops: destroy them first,
  # and kill a QEMU it could not (the daemon already gone).
  local name f pid
  for name in $(virsh -q -c "$LIBVIRT_URI" list --name 2>/dev/null); do
    virsh -q -c "$LIBVIRT_URI" destroy "$name" >/dev/null 2>&1 || true
  done
  for f in "$LIBVIRT_DIR"/run/libvirt/qemu/run/*.pid; do
    [ "$(basename "$f")" != driver.pid ] || continue
    if pid=$(qemu_of_pidfile "$f"); then kill -9 "$pid" 2>/dev/null || true; fi
  done
  kill "$LIBVIRTD_PID" 2>/dev/null || true
  for _ in $(seq 1 50); do
    kill -0 "$LIBVIRTD_PID" 2>/dev/null || break
    sleep 0.2
  done
  kill -9 "$LIBVIRTD_PID" 2>/dev/null || true
  wait "$LIBVIRTD_PID" 2>/dev/null || true
  LIBVIRTD_PID=""
}
