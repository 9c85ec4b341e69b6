#!/usr/bin/env bash
# Builds the vgpu test/demo guest: a small initramfs holding busybox (static),
# the guest kernel module, our libcuda.so.1 as the system's CUDA driver,
# NVIDIA's libcudart.so.13 (from the toolkit) as the system's CUDA runtime, as
# a student's VM has them (or, for comparison, vgpu's runtime shim), CUDA programs
# (built with plain nvcc: --static-program; with `-cudart shared`: --program),
# data files they read (--file), and the glibc/libstdc++ they need (found
# with ldd). Boots Debian's kernel (the linux-image matching the installed
# headers): see scripts/vm-boot.sh. Programs land in /opt/vgpu/programs,
# static ones in /opt/vgpu/programs/static.
#
#   vm-image.sh --out DIR --module vgpu.ko --cudart libcudart.so.13 --driver libcuda.so.1 \
#               --program PATH... [--static-program PATH...] [--file PATH...] [--kver VERSION]
#
# Writes DIR/initramfs.cpio.gz and DIR/vmlinuz (a copy of /boot/vmlinuz-VERSION).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

out="" module="" cudart="" driver="" kver="" programs=() static_programs=() files=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --module) module=$2; shift 2 ;;
    --cudart) cudart=$2; shift 2 ;;
    --driver) driver=$2; shift 2 ;;
    --program) programs+=("$2"); shift 2 ;;
    --static-program) static_programs+=("$2"); shift 2 ;;
    --file) files+=("$2"); shift 2 ;;
    --kver) kver=$2; shift 2 ;;
    *) echo "vm-image: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$out" ] && [ -n "$module" ] && [ -n "$cudart" ] && [ -n "$driver" ] || {
  echo "usage: vm-image.sh --out DIR --module vgpu.ko --cudart libcudart.so.13 --driver libcuda.so.1 --program PATH... [--static-program PATH...] [--file PATH...] [--kver V]" >&2
  exit 2
}
[ -n "$kver" ] || kver=$("$here/kernel-version.sh")
vmlinuz=/boot/vmlinuz-$kver
busybox=$(command -v busybox || echo /bin/busybox)
for f in "$module" "$cudart" "$driver" "$vmlinuz" "$busybox" "${programs[@]}" "${static_programs[@]}" "${files[@]}"; do
  [ -r "$f" ] || { echo "vm-image: missing $f (scripts/install-deps.sh installs what the image needs)" >&2; exit 1; }
done
if ldd "$busybox" >/dev/null 2>&1; then
  echo "vm-image: $busybox is not static (install busybox-static)" >&2; exit 1
fi

stage=$(mktemp -d "${TMPDIR:-/tmp}/vgpu-image.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{bin,sbin,etc,proc,sys,dev,tmp,lib64,opt/vgpu/programs/static} \
         "$stage/lib/x86_64-linux-gnu" "$stage/usr/lib/x86_64-linux-gnu"
cp "$busybox" "$stage/bin/busybox"
cp "$root/tests/kmod/guest/init" "$stage/init"
chmod 755 "$stage/init"
cp "$root/tests/kmod/guest/guest-tests.sh" "$stage/opt/vgpu/"
cp "$module" "$stage/opt/vgpu/vgpu.ko"
# The guest's CUDA runtime: `-cudart shared` programs find it as the system's.
cp -L "$cudart" "$stage/lib/x86_64-linux-gnu/libcudart.so.13"
# Our driver is the guest's CUDA driver: NVIDIA's runtime inside a plain-nvcc
# program (and any other) opens it as libcuda.so.1.
cp "$driver" "$stage/lib/x86_64-linux-gnu/libcuda.so.1"
for p in "${programs[@]}" "${files[@]}"; do cp "$p" "$stage/opt/vgpu/programs/"; done
for p in "${static_programs[@]}"; do cp "$p" "$stage/opt/vgpu/programs/static/"; done
echo "root:x:0:0:root:/:/bin/sh" > "$stage/etc/passwd"

# The shared libraries everything needs, from this (Debian 12) system.
libs() {
  ldd "$1" 2>/dev/null | awk '/=> \// { print $3 } /^\s*\/lib/ { print $1 }' | grep -v -e libcudart -e libcuda.so || true
}
{
  for p in "${programs[@]}" "${static_programs[@]}" "$cudart" "$driver"; do libs "$p"; done
} | sort -u | while read -r lib; do
  [ -e "$lib" ] || continue
  dest="$stage$lib"
  mkdir -p "$(dirname "$dest")"
  cp -L "$lib" "$dest"
done
# The dynamic loader under its canonical name.
cp -L /lib64/ld-linux-x86-64.so.2 "$stage/lib64/"

mkdir -p "$out"
(cd "$stage" && find . | sort | cpio -o -H newc --quiet) | gzip -1 > "$out/initramfs.cpio.gz.tmp"
mv "$out/initramfs.cpio.gz.tmp" "$out/initramfs.cpio.gz"
cp "$vmlinuz" "$out/vmlinuz"
echo "$kver" > "$out/kernel-version"
echo "vm-image: $out/initramfs.cpio.gz ($(du -h "$out/initramfs.cpio.gz" | cut -f1)), kernel $kver"
