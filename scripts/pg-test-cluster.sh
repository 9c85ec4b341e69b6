#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests (a ctest fixture):
#   pg-test-cluster.sh start FILE   initdb + start in a new /tmp folder; FILE gets
#                                   its libpq keywords ("host=/tmp/... user=vgpu")
#   pg-test-cluster.sh stop FILE    stop it and remove the folder
#   pg-test-cluster.sh pause FILE / resume FILE   stop and start the same server
#                                   (a database outage, for the tests of one)
# The server listens on a Unix socket in its folder only (no TCP port to
# collide with), trusts local connections, and skips fsync: test data only.
# PostgreSQL refuses to run as root, so under root it runs as `nobody`.
set -euo pipefail

cmd=${1:?usage: pg-test-cluster.sh start|stop|pause|resume FILE}
file=${2:?usage: pg-test-cluster.sh start|stop|pause|resume FILE}

bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$bin" ] || [ ! -x "$bin/pg_ctl" ]; then
  echo "pg-test-cluster: PostgreSQL's server is not installed (Debian: postgresql;" \
       "scripts/install-deps.sh installs it)" >&2
  exit 1
fi

as_owner=()
[ "$(id -u)" -eq 0 ] && as_owner=(runuser -u nobody --)

ctl() {
  local dir=$1; shift
  (cd "$dir" && "${as_owner[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" "$@")
}

folder() { sed -n 's/^host=\([^ ]*\) .*/\1/p' "$file"; }

case $cmd in
  start)
    dir=$(mktemp -d /tmp/vgpu-pg-XXXXXX)
    chmod 755 "$dir"
    [ "$(id -u)" -eq 0 ] && chown nobody: "$dir"
    (cd "$dir" && "${as_owner[@]}" "$bin/initdb" -D "$dir/data" -U vgpu --auth=trust \
       --locale=C -E UTF8 >"$dir/initdb.log" 2>&1) ||
      { cat "$dir/initdb.log" >&2; rm -rf "$dir"; exit 1; }
    # In its configuration file, so that `resume` starts it the same way.
    cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$dir'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 200
CONF
    ctl "$dir" -w start >/dev/null ||
      { cat "$dir/server.log" >&2; rm -rf "$dir"; exit 1; }
    echo "host=$dir user=vgpu" >"$file"
    echo "pg-test-cluster: PostgreSQL running in $dir"
    ;;
  stop)
    [ -f "$file" ] || exit 0
    dir=$(folder)
    if [ -n "$dir" ] && [ -d "$dir" ]; then
      ctl "$dir" -m immediate stop >/dev/null 2>&1 || true
      rm -rf "$dir"
    fi
    rm -f "$file"
    ;;
  pause) ctl "$(folder)" -m fast -w stop >/dev/null ;;
  resume) ctl "$(folder)" -w start >/dev/null ;;
  *) echo "pg-test-cluster: unknown command $cmd" >&2; exit 2 ;;
esac
