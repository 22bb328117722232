# shellcheck shell=bash
# shellcheck disable=SC2154,SC2034 # variables shared with scripts/bench, which sources this
# What scripts/bench runs against: installing the tools, building idmint, and starting idmint,
# redis-server, PostgreSQL and nginx in the run's temporary folder ($tmp) on loopback ports.
# Sourced by scripts/bench after lib.sh.
#
# Every server started here is recorded (started_pids, pg_datas) and stop_servers, which
# scripts/bench calls from its EXIT trap, stops each one by its PID.
#
# A started server is an "endpoint" to the measurements: ep_port[NAME] is its port, ep_pid[NAME]
# the process whose CPU time is its cost, ep_label[NAME] its name in the table.

declare -A ep_port=() ep_pid=() ep_label=()
# The scheme of an HTTP port served over TLS (https); http when absent.
declare -A port_scheme=()
started_pids=() # idmint, redis-server and nginx, in start order
pg_datas=()     # PostgreSQL data folders, stopped with pg_ctl

# ---------------------------------------------------------------------------------------------
# Tools, installed from Debian's packages when missing.

# The newest /usr/lib/postgresql/N/bin holding a server (Debian keeps them off PATH); empty
# when there is none.
pg_bin() {
  local d found=""
  # In version order (sort -V puts 16 after 9.6): the last complete one wins.
  while read -r d; do
    if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && [ -x "$d/postgres" ]; then found=$d; fi
  done < <(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V)
  printf '%s' "$found"
}

has() { command -v "$1" >/dev/null 2>&1; }

# install_missing PART...: installs, with one apt-get update and one apt-get install, the
# packages that the given parts need and this machine lacks.
install_missing() {
  local part pkgs=() want_redis=false want_pg=false want_nginx=false want_wrk=false
  local want_py=false want_openssl=false
  for part in "$@"; do
    case $part in
      resp | lua | plot) want_redis=true ;;
      pg) want_redis=true want_pg=true ;; # redis-benchmark is idmint's client there
      http) want_nginx=true want_wrk=true ;;
      mem) want_redis=true want_wrk=true ;;
      sec) want_redis=true want_wrk=true want_openssl=true ;;
    esac
    case $part in plot | inproc) want_py=true ;; esac
  done
  if $want_redis; then
    has redis-server || pkgs+=(redis-server)
    { has redis-cli && has redis-benchmark; } || pkgs+=(redis-tools)
  fi
  if $want_pg && { [ -z "$(pg_bin)" ] || ! { has pgbench || [ -x "$(pg_bin)/pgbench" ]; }; }; then
    pkgs+=(postgresql postgresql-contrib)
  fi
  if $want_nginx && ! has nginx; then pkgs+=(nginx); fi
  if $want_wrk && ! has wrk; then pkgs+=(wrk); fi
  if $want_py && ! has python3; then pkgs+=(python3); fi
  if $want_openssl && ! has openssl; then pkgs+=(openssl); fi
  has curl || pkgs+=(curl) # waits for the servers to be ready
  [ ${#pkgs[@]} -gt 0 ] || return 0

  [ "$(id -u)" -eq 0 ] || die "missing packages: ${pkgs[*]} (install them, or run as root)"
  has apt-get || die "missing packages: ${pkgs[*]}, and no apt-get to install them"
  say "installing ${pkgs[*]}"
  # The packages must not start their services (nginx on port 80, a PostgreSQL cluster on
  # 5432): a policy-rc.d answering 101 forbids it. Debian's container images ship one; when
  # this machine has none, one is put there for the install and removed after it.
  local policy=/usr/sbin/policy-rc.d own_policy=false status=0 log=$tmp/apt.log t0
  t0=$(now_ms)
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# put here by idmint scripts/bench during apt-get install\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    own_policy=true
    policy_to_remove=$policy # removed by the EXIT trap if the install is interrupted
  fi
  {
    DEBIAN_FRONTEND=noninteractive apt-get update -q &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=300 \
        -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
        --no-install-recommends "${pkgs[@]}"
  } </dev/null >"$log" 2>&1 || status=$?
  if $own_policy; then
    rm -f "$policy"
    policy_to_remove=""
  fi
  if [ "$status" -ne 0 ]; then
    tail -n 30 "$log" >&2
    die "apt-get install ${pkgs[*]} failed (status $status)"
  fi
  note "installed in $((($(now_ms) - t0) / 1000)) s"
}
policy_to_remove=""

# ---------------------------------------------------------------------------------------------
# idmint itself.

# Sets idmint_bin: $BENCH_IDMINT when given, else a release build in $CARGO_TARGET_DIR.
build_idmint() {
  if [ -n "${BENCH_IDMINT:-}" ]; then
    [ -x "$BENCH_IDMINT" ] || die "BENCH_IDMINT=$BENCH_IDMINT is not an executable"
    idmint_bin=$BENCH_IDMINT
    resp_load_bin=${BENCH_RESP_LOAD:-$(dirname "$BENCH_IDMINT")/resp-load}
    return 0
  fi
  has cargo || die "cargo not found: set BENCH_IDMINT to an idmint binary, or install Rust"
  local features=()
  [ -z "$bench_features" ] || features=(--features "$bench_features")
  say "building idmint (cargo build --release -p idmint ${features[*]}, CARGO_TARGET_DIR=$CARGO_TARGET_DIR)"
  local t0
  t0=$(now_ms)
  # --locked: never rewrite Cargo.lock, which others edit.
  (cd "$repo" && cargo build --release --locked -q -p idmint "${features[@]}" &&
    cargo build --release --locked -q -p idmint-bench --bin resp-load) ||
    die "cargo build failed"
  idmint_bin=$CARGO_TARGET_DIR/release/idmint
  resp_load_bin=$CARGO_TARGET_DIR/release/resp-load
  note "built in $((($(now_ms) - t0) / 1000)) s: $idmint_bin"
}

# wait_until PID CMD...: polls CMD for up to 60 s; status 1 when it never succeeds, or when the
# process PID dies first.
wait_until() {
  local pid=$1 i
  shift
  for ((i = 0; i < 600; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    running "$pid" || return 1
    sleep 0.1
  done
  return 1
}

# A server gets a few tries, each on new ports: another process may bind a port between
# free_port's check and the server's own bind.
tries=3
# retry_or_die TRY NAME PID LOG: after a failed start, stops what is left of it; dies with the
# end of its log after the last try.
retry_or_die() {
  local try=$1 name=$2 pid=$3 log=$4
  [ -z "$pid" ] || stop_pid "$pid" 5
  if [ "$try" -ge "$tries" ]; then
    printf 'bench: %s did not come up; the end of %s:\n' "$name" "$log" >&2
    tail -n 30 "$log" >&2 2>/dev/null || true
    exit 1
  fi
  note "$name did not come up (try $try of $tries); again on other ports"
}

# (-k: the sec part's TLS idmint has a self-signed certificate.)
http_ok() { curl -kfsS -o /dev/null --max-time 2 "$1"; }

# start_idmint NAME [SERVE-FLAGS...]: an idmint on its own SQLite file, endpoints NAME.resp and
# NAME.http.
start_idmint() {
  local name=$1 dir=$tmp/idmint-$1 http resp pid try scheme=http
  shift
  mkdir -p "$dir"
  case " $* " in *" --tls-cert "*) scheme=https ;; esac
  for ((try = 1; ; try++)); do
    http=$(free_port)
    resp=$(free_port)
    "$idmint_bin" serve --store "sqlite://$dir/idmint.db" --data-dir "$dir" \
      --http "127.0.0.1:$http" --resp "127.0.0.1:$resp" "$@" </dev/null >>"$dir/idmint.log" 2>&1 &
    pid=$!
    wait_until "$pid" http_ok "$scheme://127.0.0.1:$http/readyz" && break
    retry_or_die "$try" "idmint ($name)" "$pid" "$dir/idmint.log"
  done
  started_pids+=("$pid")
  ep_port[$name.resp]=$resp ep_pid[$name.resp]=$pid ep_label[$name.resp]="idmint"
  ep_port[$name.http]=$http ep_pid[$name.http]=$pid ep_label[$name.http]="idmint"
  note "idmint $name: pid $pid, http 127.0.0.1:$http, resp 127.0.0.1:$resp ${*:+($*)}"
}

# start_redis NAME none|aof: a redis-server with no persistence at all (the fastest reference),
# or with appendonly yes and appendfsync always (what an ID scheme needs not to reissue IDs
# after a crash).
start_redis() {
  local name=$1 mode=$2 dir=$tmp/$1 port pid persistence try
  mkdir -p "$dir"
  case $mode in
    none) persistence=$'appendonly no\nsave ""' ;;
    aof) persistence=$'appendonly yes\nappendfsync always\nsave ""' ;;
    *) die "start_redis: unknown mode $mode" ;;
  esac
  for ((try = 1; ; try++)); do
    port=$(free_port)
    cat >"$dir/redis.conf" <<EOF
bind 127.0.0.1
port $port
protected-mode yes
daemonize no
dir "$dir"
logfile "$dir/redis.log"
$persistence
EOF
    redis-server "$dir/redis.conf" </dev/null >>"$dir/redis.log" 2>&1 &
    pid=$!
    wait_until "$pid" redis_ping "$port" && break
    retry_or_die "$try" "redis-server ($name)" "$pid" "$dir/redis.log"
  done
  started_pids+=("$pid")
  ep_port[$name]=$port ep_pid[$name]=$pid
  if [ "$mode" = aof ]; then
    ep_label[$name]="redis-server (AOF, fsync always)"
  else
    ep_label[$name]="redis-server (no persistence)"
  fi
  note "${ep_label[$name]}: pid $pid, 127.0.0.1:$port"
}
redis_ping() { [ "$(redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null)" = PONG ]; }

# Runs a command as the owner of PostgreSQL's files: as root, the postgres user.
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then (cd "$tmp" && runuser -u postgres -- "$@"); else "$@"; fi
}

# start_pg NAME: a PostgreSQL cluster made with initdb, on a loopback port with its unix socket
# in the run's folder, default (durable) settings, a role and database "bench" holding
# scripts/bench.d/pg-setup.sql. Sets pg_port and pg_bin_dir.
start_pg() {
  local name=$1 dir=$tmp/$1 pid try
  pg_bin_dir=$(pg_bin)
  [ -n "$pg_bin_dir" ] || die "no PostgreSQL server found under /usr/lib/postgresql"
  if [ "$(id -u)" -eq 0 ]; then
    getent passwd postgres >/dev/null || die "no postgres user to run PostgreSQL as"
  fi
  mkdir -p "$dir"
  [ "$(id -u)" -ne 0 ] || chown postgres: "$dir"
  # trust: a password exchange (scram's 4,096 rounds of hashing) would add a few ms of CPU per
  # connection to both sides' figures; the cluster listens on 127.0.0.1 only, for this run.
  as_pg "$pg_bin_dir/initdb" -D "$dir/data" -U postgres -E UTF8 --locale=C --no-sync \
    --auth-local=trust --auth-host=trust >"$dir/initdb.log" 2>&1 ||
    {
      tail -n 30 "$dir/initdb.log" >&2
      die "initdb failed"
    }
  # fsync and synchronous_commit keep their defaults (on): the durable configuration. The
  # port is given at start (-p).
  cat >>"$dir/data/postgresql.conf" <<EOF

# scripts/bench
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
max_connections = 200
EOF
  pg_datas+=("$dir/data")
  for ((try = 1; ; try++)); do
    pg_port=$(free_port)
    as_pg "$pg_bin_dir/pg_ctl" start -D "$dir/data" -l "$dir/postgres.log" -o "-p $pg_port" \
      -w -t 60 </dev/null >/dev/null 2>&1 && break
    retry_or_die "$try" postgres "" "$dir/postgres.log"
  done
  pid=$(head -n1 "$dir/data/postmaster.pid")
  "$pg_bin_dir/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir" -p "$pg_port" -U postgres -d postgres \
    -c "CREATE ROLE bench LOGIN" -c "CREATE DATABASE bench OWNER bench" \
    >/dev/null || die "could not create the bench role and database"
  "$pg_bin_dir/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$pg_port" \
    -U bench -d bench -f "$here/pg-setup.sql" >/dev/null || die "pg-setup.sql failed"
  ep_port[$name]=$pg_port ep_pid[$name]=$pid ep_label[$name]="PostgreSQL $("$pg_bin_dir/postgres" -V | awk '{ print $3 }')"
  note "${ep_label[$name]}: postmaster pid $pid, 127.0.0.1:$pg_port"
}

# start_nginx NAME WORKERS BODY: nginx answering every GET with BODY (scripts/bench.d/nginx.conf.in).
start_nginx() {
  local name=$1 workers=$2 body=$3 dir=$tmp/$1 port pid try
  mkdir -p "$dir/tmp"
  for ((try = 1; ; try++)); do
    port=$(free_port)
    sed -e "s|@WORKERS@|$workers|g" -e "s|@DIR@|$dir|g" -e "s|@PORT@|$port|g" \
      -e "s|@BODY@|$body|g" "$here/nginx.conf.in" >"$dir/nginx.conf"
    # -e: the error log before the configuration is read, which would else be /var/log/nginx.
    nginx -e "$dir/error.log" -p "$dir" -c "$dir/nginx.conf" -g 'daemon off;' </dev/null \
      >>"$dir/nginx.out" 2>&1 &
    pid=$!
    wait_until "$pid" http_ok "http://127.0.0.1:$port/" && break
    retry_or_die "$try" nginx "$pid" "$dir/error.log"
  done
  started_pids+=("$pid")
  ep_port[$name]=$port ep_pid[$name]=$pid ep_label[$name]="nginx ($workers workers)"
  note "nginx: master pid $pid, 127.0.0.1:$port, worker_processes $workers"
}

# Stops every server started above, newest first, by PID.
stop_servers() {
  local i d pid
  for ((i = ${#started_pids[@]} - 1; i >= 0; i--)); do
    stop_pid "${started_pids[$i]}" 20
  done
  started_pids=()
  for d in "${pg_datas[@]}"; do
    [ -f "$d/postmaster.pid" ] || continue
    pid=$(head -n1 "$d/postmaster.pid")
    as_pg "$pg_bin_dir/pg_ctl" stop -D "$d" -m fast -w -t 60 >/dev/null 2>&1 || true
    stop_pid "$pid" 10 # already gone, unless pg_ctl could not stop it
  done
  pg_datas=()
}
