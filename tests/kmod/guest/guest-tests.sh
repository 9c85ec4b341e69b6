# The vgpu guest's scenarios (busybox sh). Every result is one console line
#   VGPU-RESULT <what> PASS|FAIL ...
# and the kernel's health comes last:
#   VGPU-KERNEL <dmesg line>   each warning, bug, oops or call trace
#   VGPU-TAINT <n>             /proc/sys/kernel/tainted
# The host test (tests/kmod) reads them; it allows taint O and E only (an
# out-of-tree, unsigned module).
P=/opt/vgpu/programs
OUT=/tmp/out
mkdir -p $OUT

result() { echo "VGPU-RESULT $*"; }

# check NAME FILE RC [LABEL]: a program passed if it exited 0 and printed
# "PASS NAME"; the result is reported as LABEL (default NAME).
check() {
  label=${4:-$1}
  sed "s/^/  [$label] /" "$2"
  if [ "$3" -eq 0 ] && grep -q "^PASS $1" "$2"; then result "$label" PASS; else result "$label" "FAIL (exit $3)"; fi
}

# run NAME [ARGS]: one program in the foreground.
run() {
  name=$1; shift
  "$P/$name" "$@" > $OUT/$name.log 2>&1
  check "$name" $OUT/$name.log $?
}

load() {
  if insmod /opt/vgpu/vgpu.ko && [ -c /dev/vgpu ]; then result "insmod" PASS; else result "insmod" FAIL; fi
}

programs() {
  run vgpu_abi
  for p in device_query saxpy vector_add struct_param constant_memory streams_events pinned_memory \
           unsupported_call; do
    run $p
  done
  run error_paths --sim
  # Plain-nvcc builds (NVIDIA's static runtime) and the driver API, on the
  # guest's libcuda.so.1.
  for p in device_query saxpy vector_add streams_events managed_memory graphs printf_program \
           runtime_features assert_program textures cooperative threads many_copies pitched_copies; do
    "$P/static/$p" > $OUT/static-$p.log 2>&1
    check $p $OUT/static-$p.log $? static-$p
  done
  run driver_api $P/driver_kernels.cubin
  # vgpu-smi over /dev/vgpu: the virtual GPU and the VM's budget, as JSON,
  # while a program holds 24 MiB: listed (it has /dev/vgpu open) with that
  # memory (vgpud's count for its /dev/vgpu client, from the module's fdinfo).
  "$P/static/busy" 200000 10 0 24 > $OUT/static-busy.log 2>&1 & b=$!
  i=0; while ! grep -q '^launched' $OUT/static-busy.log && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
  "$P/vgpu-smi" -o json > $OUT/vgpu-smi.log 2>&1; rc=$?
  wait $b; rb=$?
  sed "s/^/  [vgpu-smi] /" $OUT/vgpu-smi.log
  sed "s/^/  [static-busy] /" $OUT/static-busy.log
  if [ $rc -eq 0 ] && [ $rb -eq 0 ] && grep -q '"uuid": "GPU-' $OUT/vgpu-smi.log &&
     grep -q '"limited": false' $OUT/vgpu-smi.log && grep -q '"vm": "vm1"' $OUT/vgpu-smi.log &&
     grep -q "\"pid\": $b\$" $OUT/vgpu-smi.log && grep -q '"memory_bytes": 25165824' $OUT/vgpu-smi.log; then
    result vgpu-smi PASS
  else
    result vgpu-smi "FAIL (exit $rc)"
  fi
}

# Two processes of one VM at once: both right, and neither can touch the
# other's memory (each process has its own context on the host).
pair() {
  "$P/vector_add" > $OUT/pair-a.log 2>&1 & a=$!
  "$P/saxpy" > $OUT/pair-b.log 2>&1 & b=$!
  wait $a; ra=$?
  wait $b; rb=$?
  check vector_add $OUT/pair-a.log $ra
  check saxpy $OUT/pair-b.log $rb
  rm -f /tmp/secret
  "$P/cross_tenant" owner /tmp/secret > $OUT/owner.log 2>&1 & o=$!
  i=0; while [ ! -e /tmp/secret ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
  "$P/cross_tenant" thief /tmp/secret > $OUT/thief.log 2>&1; rt=$?
  rm -f /tmp/secret
  wait $o; ro=$?
  check cross_tenant $OUT/thief.log $rt
  check cross_tenant $OUT/owner.log $ro
}

# A process killed mid-call leaves nothing allocated on the host.
killed() {
  "$P/hold" 64 > $OUT/hold.log 2>&1 & h=$!
  i=0; while ! grep -q holding $OUT/hold.log && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
  sleep 1
  if grep -q holding $OUT/hold.log; then result "hold-started" PASS; else result "hold-started" FAIL; fi
  "$P/meminfo" held 64 > $OUT/held.log 2>&1
  check meminfo $OUT/held.log $?
  kill -9 $h; wait $h
  run meminfo released 20
}

# A process killed while its own long kernel runs (10 s): the host ends its
# session when the kernel ends, and neither the VM's next process nor the
# host's heartbeat waits for that (a wait of 9 s would have the module take
# vgpud for dead). The next process must take at most 3 s more than alone.
leaver() {
  "$P/busy" 10000000 1 > $OUT/leaver.log 2>&1 & l=$!
  i=0; while ! grep -q launched $OUT/leaver.log && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
  sleep 1   # the launch has reached the host: the kernel runs
  kill -9 $l; wait $l
  sed 's/^/  [leaver] /' $OUT/leaver.log
  if ! grep -q launched $OUT/leaver.log; then result leaver "FAIL (busy did not launch)"; return; fi
  t0=$(date +%s)
  run device_query
  took=$(($(date +%s) - t0))
  # device_query alone, for a bound that holds on a slow emulator too.
  t0=$(date +%s)
  "$P/device_query" > /dev/null 2>&1
  alone=$(($(date +%s) - t0))
  if [ $took -le $((alone + 3)) ]; then
    result leaver PASS
  else
    result leaver "FAIL (the next process took $took s, $alone s alone)"
  fi
}

reload() {
  if rmmod vgpu && [ ! -e /dev/vgpu ]; then result "rmmod" PASS; else result "rmmod" FAIL; fi
  load
  run saxpy
}

rtt() {
  "$P/meminfo" rtt 500 > $OUT/rtt.log 2>&1
  check meminfo $OUT/rtt.log $?
  sed -n 's/^rtt_us \([0-9.]*\) min_us \([0-9.]*\).*/VGPU-RTT \1 \2/p' $OUT/rtt.log
}

# A process holds device memory and keeps calling vgpud; the host test stops
# (or kills, or pauses) vgpud once it sees VGPU-HOLDING. The process must get
# a clear error instead of hanging.
hold_until_error() {
  "$P/hold" 16 > $OUT/hold.log 2>&1 & h=$!
  i=0; while ! grep -q holding $OUT/hold.log && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
  echo "VGPU-HOLDING"
  wait $h
  sed 's/^/  [hold] /' $OUT/hold.log
  if grep -q "lost the connection to vgpud" $OUT/hold.log; then result host-stop PASS; else result host-stop FAIL; fi
}

# refused NAME TEXT: a program started now fails, saying TEXT.
refused() {
  "$P/saxpy" > $OUT/$1.log 2>&1; rc=$?
  sed "s/^/  [saxpy] /" $OUT/$1.log
  if [ $rc -ne 0 ] && grep -q "$2" $OUT/$1.log; then result "$1" PASS; else result "$1" "FAIL (exit $rc)"; fi
}

# saxpy_within TRIES: saxpy, once a second until it passes (the host test
# changes something meanwhile).
saxpy_within() {
  i=0
  until "$P/saxpy" > $OUT/saxpy.log 2>&1; do
    i=$((i + 1)); [ $i -ge "$1" ] && break; sleep 1
  done
  check saxpy $OUT/saxpy.log $?
}

# vgpud stops: it closes the VM's channel, and later processes are told so.
hoststop() {
  hold_until_error
  refused channel-closed "closed this VM's vgpu channel"
}

# vgpud is killed outright: nothing closes the channel, the module sees its
# heartbeat stand still, and later processes are told it stopped answering.
hostkill() {
  hold_until_error
  refused host-silent "vgpud on the host stopped answering"
}

# vgpud is paused (SIGSTOP) long enough for the module to take it for dead;
# the host test lets it go on once it sees VGPU-SILENT. Then the module
# attaches afresh: what the VM held is released and new processes work.
hostpause() {
  hold_until_error
  refused host-silent "vgpud on the host stopped answering"
  echo "VGPU-SILENT"
  saxpy_within 30
  run meminfo released 5
}

# The VM is bound to no student on a host that refuses such VMs: its
# programs are refused, but the module keeps its channel; the host test binds
# it once it sees VGPU-REFUSED, and a program runs without a reboot.
unassigned() {
  refused not-admitted "vgpud does not admit this VM"
  echo "VGPU-REFUSED"
  saxpy_within 40
}

# vgpud is killed outright while a process waits in poll() on /dev/vgpu
# and no one else waits (the host test kills it once it sees
# VGPU-HOLDING): poll() returns POLLHUP instead of sleeping on.
hostpoll() {
  "$P/vgpu_abi" --await-hangup 60 > $OUT/poll.log 2>&1 & h=$!
  i=0; while ! grep -q awaiting $OUT/poll.log && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
  echo "VGPU-HOLDING"
  wait $h
  check vgpu_abi_hangup $OUT/poll.log $?
}

# vgpud is killed under the running VM and started again, twice (the host
# test, tests/libvirt_e2e, kills it once it sees VGPU-HOLDING and starts it
# once it sees VGPU-SILENT): the old device cannot reach the new vgpud, so
# vgpud unplugs it and plugs in a new one; the module takes up the new one and
# a program runs without a reboot. The second time, the device unplugged is
# itself a replugged one.
restart() {
  run saxpy
  for round in 1 2; do
    hold_until_error
    refused host-silent "vgpud on the host stopped answering"
    echo "VGPU-SILENT $round"
    saxpy_within 90
  done
}

# The VM runs without the vgpu device until the host plugs it in (the host
# test runs `vgpuctl vm attach` once it sees VGPU-AWAIT-DEVICE): the module,
# loaded before, takes it up, and a program runs on it.
hotplug() {
  if insmod /opt/vgpu/vgpu.ko; then result "insmod" PASS; else result "insmod" FAIL; return; fi
  echo "VGPU-AWAIT-DEVICE"
  i=0; while [ ! -c /dev/vgpu ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done
  if [ -c /dev/vgpu ]; then result hotplug PASS; else result hotplug "FAIL (no device in 120 s)"; return; fi
  run saxpy
}

health() {
  dmesg | grep -E "WARNING:|BUG:|Oops|Call Trace|general protection|UBSAN|KASAN|list_(add|del) corruption|refcount_t|INFO: task .* blocked|vgpu.*(lost|broke)" |
    sed 's/^/VGPU-KERNEL /'
  echo "VGPU-TAINT $(cat /proc/sys/kernel/tainted)"
  dmesg | grep -i vgpu | sed 's/^/  [dmesg] /'
}

case "$1" in
  main)  load; programs; pair; killed; leaver; rtt; reload ;;
  basic) load; run saxpy; run vector_add; rtt ;;
  hoststop) load; hoststop ;;
  hostkill) load; hostkill ;;
  hostpause) load; hostpause ;;
  unassigned) load; unassigned ;;
  hostpoll) load; hostpoll ;;
  hotplug) hotplug ;;
  restart) load; restart ;;
  shell) load; echo "vgpu guest: programs in $P; poweroff -f to stop"; setsid cttyhack sh ;;
  *)     result "scenario-$1" "FAIL (unknown)" ;;
esac
health
