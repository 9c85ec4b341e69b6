#!/usr/bin/env bash
# Prints the kernel version the guest module and the QEMU image use: the one
# Debian's linux-headers-amd64 installed (it must match an installed
# linux-image, whose vmlinuz boots the test guest). The running kernel is not
# used: a build host or CI runner may run another kernel.
# Exit status 1 (and nothing printed) when no such headers are installed.
set -euo pipefail
dep=$(dpkg-query -W -f='${Depends}' linux-headers-amd64 2>/dev/null || true)
ver=$(sed -n 's/.*linux-headers-\([0-9][^ ,]*-amd64\).*/\1/p' <<<"$dep" | head -n 1)
if [ -z "$ver" ]; then
  # Not the meta-package: the newest headers tree with a build link.
  ver=$(ls -1 /lib/modules 2>/dev/null | sort -V | while read -r v; do
          [ -e "/lib/modules/$v/build/Makefile" ] && echo "$v"; done | tail -n 1)
fi
[ -n "$ver" ] && [ -e "/lib/modules/$ver/build/Makefile" ] || exit 1
echo "$ver"
