#!/usr/bin/env bash
# Installs what vgpu needs to build and run, from Debian 12's packages.
# Idempotent: installs only what is missing. Run as root (or with sudo).
# The CUDA Toolkit itself is expected at /usr/local/cuda (or $CUDA_HOME).
set -euo pipefail

packages=(
  build-essential cmake pkg-config      # the build
  clang                                 # the fuzzers, the thread-safety check
  libtbb-dev libsqlite3-dev sqlite3     # oneTBB queues, the policy store (and its CLI)
  libhowardhinnant-date-dev tzdata      # courses' time zones (the system's tz database)
  libseccomp-dev                        # the sim worker's sandbox
  libsystemd-dev                        # vgpud under systemd: readiness, watchdog, journal
  libcpp-httplib-dev                    # vgpud's Prometheus metrics endpoint
  prometheus                            # the metrics test scrapes vgpud with a real Prometheus
  help2man                              # man pages from the programs' --help
  libzstd-dev liblz4-dev                # compressed fat binary entries
  libcli11-dev nlohmann-json3-dev       # command lines, JSON
  libtomlplusplus-dev                   # vgpud.toml, the configuration file
  libfmt-dev libspdlog-dev              # logging
  catch2                                # unit tests (v2)
  libtirpc-dev                          # the ONC RPC baseline of the benchmarks (tests/bench)
  # The guest kernel module and its QEMU tests (tests/kmod): Debian's kernel
  # headers and image (the same version), QEMU, a static busybox, cpio.
  linux-headers-amd64 linux-image-amd64 qemu-system-x86 busybox-static cpio
  dkms                                  # the installed guest sources as a DKMS tree (tests/install)
  # libvirt: the client library and libxml2 (vgpud, vgpuctl); a libvirtd
  # with its QEMU driver, virsh and jq for the end-to-end test (tests/libvirt_e2e).
  libvirt-dev libxml2-dev libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients jq
  chromium                              # the HTML usage report's test (headless)
  systemd                               # systemd-analyze: the installed unit's test (tests/install)
)

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

cuda=${CUDA_HOME:-/usr/local/cuda}
if [ ! -x "$cuda/bin/nvcc" ]; then
  echo "install-deps: the CUDA Toolkit is not at $cuda (nvcc missing)." >&2
  echo "  Install CUDA 13 from NVIDIA and set CUDA_HOME if it lives elsewhere." >&2
  exit 1
fi
echo "install-deps: all dependencies present (CUDA: $("$cuda/bin/nvcc" --version | tail -n 1))"
