#!/usr/bin/env bash
# Boots the vgpu guest (scripts/vm-image.sh) in QEMU without KVM, its ivshmem
# device wired to a running vgpud:
#
#   vm-boot.sh --image DIR --socket PATH   ivshmem-doorbell: PATH is the VM's
#                                          socket (vgpud --vm-socket NAME makes
#                                          <runtime-dir>/vms/NAME.sock)
#   vm-boot.sh --image DIR --plain FILE    ivshmem-plain: FILE is the VM's region
#                                          (vgpud --vm-plain NAME: .../NAME.shm)
# Options: --test SCENARIO (guest-tests.sh: main, basic; default shell, an
# interactive console), --console FILE (default: this terminal), --smp N,
# --memory MiB. QEMU's exit status is this script's.
set -euo pipefail
image="" socket="" plain="" scenario=shell console="" smp=1 memory=512
while [ $# -gt 0 ]; do
  case "$1" in
    --image) image=$2; shift 2 ;;
    --socket) socket=$2; shift 2 ;;
    --plain) plain=$2; shift 2 ;;
    --test) scenario=$2; shift 2 ;;
    --console) console=$2; shift 2 ;;
    --smp) smp=$2; shift 2 ;;
    --memory) memory=$2; shift 2 ;;
    *) echo "vm-boot: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$image" ] && { [ -n "$socket" ] || [ -n "$plain" ]; } || {
  echo "usage: vm-boot.sh --image DIR (--socket PATH | --plain FILE) [--test S] [--console F]" >&2
  exit 2
}
if [ -n "$socket" ]; then
  # vectors=1: vgpud serves one interrupt vector each way.
  dev=(-chardev "socket,path=$socket,id=vgpu" -device "ivshmem-doorbell,chardev=vgpu,vectors=1")
else
  size=$(stat -c %s "$plain")
  dev=(-object "memory-backend-file,id=vgpu,share=on,mem-path=$plain,size=$size"
       -device "ivshmem-plain,memdev=vgpu")
fi
if [ -n "$console" ]; then serial=(-serial "file:$console"); else serial=(-serial mon:stdio); fi
# The allocator checks Debian's kernel has built in but off: red zones,
# poisoning and sanity checks catch the module's heap misuse as a "BUG".
debug="slub_debug=FZPU page_poison=1"
exec qemu-system-x86_64 -accel tcg -cpu max -smp "$smp" -m "$memory" \
  -nodefaults -no-user-config -display none -no-reboot "${serial[@]}" \
  -kernel "$image/vmlinuz" -initrd "$image/initramfs.cpio.gz" \
  -append "console=ttyS0 quiet panic=-1 $debug vgpu.test=$scenario" \
  "${dev[@]}"
