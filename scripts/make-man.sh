#!/usr/bin/env bash
# Writes the man page of one of vgpu's commands from its own --help texts
# (help2man, from Debian), with a COMMANDS section holding the --help of
# every subcommand, so the page says what the program says.
#
#   scripts/make-man.sh PROGRAM "SHORT DESCRIPTION" OUT.1
set -euo pipefail
program=${1:?usage: make-man.sh PROGRAM DESCRIPTION OUT}
description=${2:?usage: make-man.sh PROGRAM DESCRIPTION OUT}
out=${3:?usage: make-man.sh PROGRAM DESCRIPTION OUT}
name=$(basename "$program")
command -v help2man >/dev/null || { echo "make-man: help2man is missing (scripts/install-deps.sh)" >&2; exit 1; }

# The subcommands a --help text lists.
subcommands() {
  awk '/^Subcommands:/ {on = 1; next} /^[^ ]/ {on = 0} on && /^  [a-z]/ {print $1}'
}

# Troff-safe lines: backslashes doubled, a leading . or ' escaped.
escape() {
  sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"
}

include=$(mktemp)
trap 'rm -f "$include"' EXIT

walk() {  # walk WORDS...: this level's help, then each subcommand's
  local help sub
  help=$("$program" "$@" --help)
  if (($#)); then
    printf '.SS "%s %s"\n.nf\n' "$name" "$*" >>"$include"
    sed '1,/^$/d' <<<"$help" | escape >>"$include"  # less the one-line summary
    printf '.fi\n' >>"$include"
  fi
  for sub in $(subcommands <<<"$help"); do
    walk "$@" "$sub"
  done
}

printf '[COMMANDS]\n' >"$include"
walk
if [ "$(wc -l <"$include")" -eq 1 ]; then
  : >"$include"  # no subcommands: no COMMANDS section
fi
printf '[SEE ALSO]\nvgpud(1), vgpuctl(1), vgpu-run(1); the README and docs/ of vgpu.\n' >>"$include"
help2man --no-info --no-discard-stderr --name "$description" --include "$include" \
  --output "$out" "$program"
