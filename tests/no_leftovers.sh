#!/bin/sh
# Runs after every other test (a ctest fixture's cleanup): a vgpud of this
# build whose runtime directory is gone outlived the test that started it.
# Each test must end what it starts, on every path.
# Usage: no_leftovers.sh BIN_DIR
bin=$1
leaks=""
for pid in $(pgrep -f "^$bin/vgpud( |\$)"); do
  dir=$(tr '\0' '\n' < "/proc/$pid/cmdline" 2>/dev/null | sed -n '/^--runtime-dir$/{n;p;}')
  if [ -n "$dir" ] && [ ! -d "$dir" ]; then
    leaks="$leaks
  pid $pid: $(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null)"
  fi
done
if [ -n "$leaks" ]; then
  echo "no_leftovers: daemons left running by tests whose directories are gone:$leaks" >&2
  exit 1
fi
echo "no_leftovers: no test left a daemon behind"
