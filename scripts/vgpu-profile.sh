# vgpu (the vgpu-guest package): in a VM without NVIDIA's driver, CUDA
# programs load vgpu's libcuda.so.1 and libnvidia-ml.so.1, which reach the
# host's GPU through /dev/vgpu. Where NVIDIA's driver is installed (a host),
# nothing changes. Programs not started from a login shell (services,
# notebooks) need LD_LIBRARY_PATH=/usr/lib/vgpu themselves.
if [ ! -e /proc/driver/nvidia/version ] && [ -d /usr/lib/vgpu ]; then
  case ":${LD_LIBRARY_PATH:-}:" in
    *:/usr/lib/vgpu:*) ;;
    *) export LD_LIBRARY_PATH="/usr/lib/vgpu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;;
  esac
fi
