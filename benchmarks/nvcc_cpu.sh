# Sourced by search_floor.sh and record_tables.sh: each nvcc run's CPU seconds.
#   nvcc_cpu_wrapper DIR LOG   puts an nvcc in DIR/bin (put DIR/bin first on PATH) that runs the
#                              real one and appends to LOG one line per build: its arguments,
#                              tab-separated, then bash's `times` line of its children (user and
#                              system CPU of nvcc and the cicc and ptxas it ran), in one write
#                              (16 wrappers append at once; `nvcc --version` is not logged).
nvcc_cpu_wrapper() {
  local dir=$1 log=$2 real
  real=$(command -v nvcc)
  mkdir -p "$dir/bin"
  cat > "$dir/bin/nvcc" <<EOF
#!/usr/bin/env bash
"$real" "\$@"
code=\$?
case " \$* " in  # times' second line: this shell's children (nvcc), not in a pipe's subshell
  *" --version "*) ;;
  *) times > "$dir/times.\$\$"
     line="\$(printf '%s\t' "\$@")\$(tail -1 "$dir/times.\$\$")"
     printf '%s\n' "\$line" >> "$log"
     rm -f "$dir/times.\$\$" ;;
esac
exit \$code
EOF
  chmod +x "$dir/bin/nvcc"
}
