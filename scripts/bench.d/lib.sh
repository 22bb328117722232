# shellcheck shell=bash
# Helpers of scripts/bench that know nothing of idmint: messages, ports, processes, CPU time,
# medians and number formatting. Sourced by scripts/bench, which sets `set -euo pipefail`.

say() { printf '==> %s\n' "$*" >&2; }
note() { printf '    %s\n' "$*" >&2; }
die() {
  printf 'bench: %s\n' "$*" >&2
  exit 1
}

# ms since 1970, for durations.
now_ms() { date +%s%3N; }

# A free loopback port below the ephemeral range (so no outgoing connection takes it while the
# run lasts; 10000-19999 normally), away from the servers' default ports, and not handed out
# before in this run. Another process may still bind it before our server does: the servers
# are started with a few tries (see servers.sh).
ports_taken=" "
port_hi=$(awk '{ print ($1 > 20000 ? 20000 : $1) - 1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 19999)
free_port() {
  local p i
  for ((i = 0; i < 500; i++)); do
    p=$((10000 + RANDOM % (port_hi - 9999)))
    case "$ports_taken" in *" $p "*) continue ;; esac
    # A connection that fails means nobody listens there.
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      ports_taken+="$p "
      printf '%s' "$p"
      return 0
    fi
  done
  die "no free port found on 127.0.0.1"
}

# Whether a process runs: it exists and is not a zombie (a child that exited, not reaped yet).
running() {
  local state
  state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [[ $state != Z* ]]
}

# stop_pid PID SECONDS: TERM, then KILL when it is still there after SECONDS.
stop_pid() {
  local pid=$1 secs=$2 i
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < secs * 10; i++)); do
    running "$pid" || break
    sleep 0.1
  done
  if running "$pid"; then
    note "pid $pid still running after ${secs} s: KILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true # reaps it when it is our child
}

# The PIDs of a process and all its descendants.
process_tree() {
  ps -e -o pid=,ppid= | awk -v root="$1" '
    { parent[$1] = $2 }
    END {
      tree[root] = 1
      for (grew = 1; grew;) {
        grew = 0
        for (p in parent) if (!(p in tree) && (parent[p] in tree)) { tree[p] = 1; grew = 1 }
      }
      for (p in tree) print p
    }'
}

clk_tck=$(getconf CLK_TCK)
# CPU seconds used so far by a process tree: user and system time of every process in it (all
# threads), plus what its reaped children used (cutime, cstime). Compare two readings taken
# around a measurement; children that exit in between (PostgreSQL backends) are counted once
# their parent reaped them.
cpu_seconds() {
  local p stat total=0
  for p in $(process_tree "$1"); do
    stat=$(cat "/proc/$p/stat" 2>/dev/null) || continue
    stat=${stat##*) }
    # After "pid (comm) ": state is field 1, utime 12, stime 13, cutime 14, cstime 15.
    total=$((total + $(awk '{ print $12 + $13 + $14 + $15 }' <<<"$stat")))
  done
  awk -v t="$total" -v hz="$clk_tck" 'BEGIN { printf "%.2f", t / hz }'
}

# A field of /proc/PID/status in KiB (VmRSS, VmHWM).
proc_kib() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }

# The median of the numbers given (nothing printed and status 1 when none are).
median() {
  [ $# -gt 0 ] || return 1
  printf '%s\n' "$@" | sort -g | awk '
    { v[NR] = $1 }
    END { if (NR % 2) printf "%.6g\n", v[(NR + 1) / 2]; else printf "%.6g\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# 1234567 -> 1.23M, 45678 -> 45.7k (three significant digits).
human() {
  awk -v v="$1" 'BEGIN {
    s = ""; if (v >= 1e9) { v /= 1e9; s = "G" } else if (v >= 1e6) { v /= 1e6; s = "M" } else if (v >= 1e3) { v /= 1e3; s = "k" }
    if (v >= 100) printf "%.0f%s", v, s; else if (v >= 10) printf "%.1f%s", v, s; else printf "%.2f%s", v, s }'
}

# awk as a calculator: calc 'a / b' with a=..., b=... given as further NAME=VALUE arguments.
calc() {
  local expr=$1 vars=()
  shift
  for v in "$@"; do vars+=(-v "$v"); done
  awk "${vars[@]}" "BEGIN { printf \"%.6g\", ($expr) }"
}
