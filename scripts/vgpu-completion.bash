# Bash completion for vgpuctl, vgpud, vgpu-run and vgpu-smi (installed as
# share/bash-completion/completions/{vgpuctl,vgpud,vgpu-run,vgpu-smi}). It asks the
# command itself: `CMD [SUBCOMMAND...] --help` lists the subcommands and
# options at that point, so completion never falls behind the program.
# Choices shown as {a,b,c} in the help complete as values of their option.

# The subcommands and options that `--help` of the words so far lists.
_vgpu_help_words() {
  local section="" line word
  while IFS= read -r line; do
    case "$line" in
      Subcommands:*) section=sub; continue ;;
      Options:*) section=opt; continue ;;
      Positionals:*) section=pos; continue ;;
      "") continue ;;
    esac
    case "$section" in
      sub)
        [[ "$line" =~ ^\ \ ([a-z][a-z0-9-]*)\  ]] && echo "${BASH_REMATCH[1]}" ;;
      opt)
        # "  -h,--help  ..." or "  --gpu-time TEXT:..."
        if [[ "$line" =~ ^\ \ (-[a-zA-Z],)?(--[a-z][a-z0-9-]*) ]]; then
          echo "${BASH_REMATCH[2]}"
        fi ;;
    esac
  done
}

# The values an option accepts when its help shows a set: "--x TEXT:{a,b}".
_vgpu_option_choices() {
  local option=$1 line
  while IFS= read -r line; do
    if [[ "$line" =~ ^\ \ (-[a-zA-Z],)?${option}\ [A-Z]+:\{([^}]*)\} ]]; then
      echo "${BASH_REMATCH[2]}" | tr ',' '\n'
      return
    fi
  done
}

# Whether OPTION takes a value at this level: its help line names a type.
_vgpu_takes_value() {
  local help=$1 option=$2 line
  while IFS= read -r line; do
    [[ "$line" =~ ^\ \ (-[a-zA-Z],)?${option}\ [A-Z] ]] && return 0
  done <<<"$help"
  return 1
}

_vgpu_complete() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=""
  ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
  local cmd=${COMP_WORDS[0]} path=() i w help next
  help=$("$cmd" --help 2>/dev/null) || return 0
  # Walk the words before the cursor: options (and the values of those that
  # take one) are skipped, a word the command knows as a subcommand goes
  # into the path, anything else is a positional. vgpu-run's own words end
  # at its "--".
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=${COMP_WORDS[i]}
    [[ "$w" == "--" ]] && return 0  # the program's own arguments
    if [[ "$w" == -* ]]; then
      [[ "$w" != *=* ]] && _vgpu_takes_value "$help" "$w" && ((i++))
      continue
    fi
    if next=$("$cmd" "${path[@]}" "$w" --help 2>/dev/null) && [[ "$next" != "$help" ]]; then
      path+=("$w")
      help=$next
    fi
  done
  if [[ "$prev" == --* ]] && _vgpu_takes_value "$help" "$prev"; then
    local choices
    choices=$(_vgpu_option_choices "$prev" <<<"$help")
    mapfile -t COMPREPLY < <(compgen -W "$choices" -- "$cur")
    return 0  # a value with no fixed set: the shell's default (files)
  fi
  mapfile -t COMPREPLY < <(compgen -W "$(_vgpu_help_words <<<"$help")" -- "$cur")
  return 0
}

complete -F _vgpu_complete -o default vgpuctl vgpud vgpu-run vgpu-smi
