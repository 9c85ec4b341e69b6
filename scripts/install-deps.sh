#!/usr/bin/env bash
# Installs what vgpu needs to build and run its tests, from Debian 12's
# packages; with --demo, only what building vgpu needs (scripts/demo.sh: no
# kernel image, QEMU, libvirtd or browser). Idempotent: installs only what is
# missing. Run as root (or with sudo).
# The CUDA Toolkit itself is expected at /usr/local/cuda (or $CUDA_HOME).
set -euo pipefail

# The CUDA Toolkit first: it is not a Debian package, and without it nothing
# below is worth installing.
cuda=${CUDA_HOME:-/usr/local/cuda}
if [ ! -x "$cuda/bin/nvcc" ]; then
  echo "install-deps: the CUDA Toolkit is not at $cuda (nvcc missing)." >&2
  echo "  Install CUDA 13 from NVIDIA and set CUDA_HOME if it lives elsewhere." >&2
  exit 1
fi

# What building vgpu needs (the demo installs only these: --demo).
build_packages=(
  build-essential cmake pkg-config      # the build
  libtbb-dev libsqlite3-dev sqlite3     # oneTBB queues, the policy store (and its CLI)
  libpq-dev                             # the store on a shared PostgreSQL server
  libhowardhinnant-date-dev tzdata      # courses' time zones (the system's tz database)
  libseccomp-dev                        # the sim worker's sandbox
  libsystemd-dev                        # vgpud under systemd: readiness, watchdog, journal
  libcpp-httplib-dev                    # vgpud's Prometheus metrics endpoint
  help2man                              # man pages from the programs' --help
  libzstd-dev liblz4-dev                # compressed fat binary entries
  libcli11-dev nlohmann-json3-dev       # command lines, JSON
  libtomlplusplus-dev                   # vgpud.toml, the configuration file
  libfmt-dev libspdlog-dev              # logging
  libvirt-dev libxml2-dev               # libvirt's client library (vgpud, vgpuctl)
  catch2 libtirpc-dev                   # configuring the tests: Catch2 (v2), the benchmarks' ONC RPC baseline
)
# What the tests need besides.
test_packages=(
  clang                                 # the fuzzers, the thread-safety check
  prometheus                            # the metrics test scrapes vgpud with a real Prometheus
  postgresql                            # the shared store's tests start their own server
  # The guest kernel module and its QEMU tests (tests/kmod): Debian's kernel
  # headers and image (the same version), QEMU, a static busybox, cpio.
  linux-headers-amd64 linux-image-amd64 qemu-system-x86 busybox-static cpio
  dkms                                  # the installed guest sources as a DKMS tree (tests/install)
  # A libvirtd with its QEMU driver, virsh and jq for the end-to-end test
  # (tests/libvirt_e2e).
  libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients jq
  chromium                              # the HTML usage report's test (headless)
  systemd                               # systemd-analyze: the installed unit's test (tests/install)
  lintian dpkg-dev adduser              # the Debian packages: checked, their dependencies, the vgpu user (tests/install)
)

packages=("${build_packages[@]}")
[ "${1:-}" = "--demo" ] || packages+=("${test_packages[@]}")

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install-deps: run as root to install ${missing[*]}" >&2; exit 1; }
    sudo="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q
  $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

echo "install-deps: all dependencies present (CUDA: $("$cuda/bin/nvcc" --version | tail -n 1))"
