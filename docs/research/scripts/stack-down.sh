#!/bin/bash
# Stop in reverse order: Connect -> registry -> broker -> PGs. Each server runs in its own process group.
S=${1:?state dir}
stopgrp() { # name pidfile grace_s
  local pid; pid=$(cat "$2" 2>/dev/null) || return 0
  kill -0 "$pid" 2>/dev/null || return 0
  local t0; t0=$(date +%s.%N)
  kill -TERM -- -"$pid" 2>/dev/null
  for _ in $(seq 1 $(($3*10))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then kill -KILL -- -"$pid"; echo "$1: SIGKILL after ${3}s"; else echo "$1 stopped in $(echo "$(date +%s.%N)-$t0"|bc|xargs printf '%.2f')s"; fi
}
stopgrp connect "$S/connect/pid" 20
stopgrp registry "$S/registry/pid" 5
stopgrp broker "$S/broker/pid" 10
for c in sourcepg brokerpg; do
  [ -f "$S/$c/data/postmaster.pid" ] && runuser -u postgres -- /usr/lib/postgresql/15/bin/pg_ctl -D "$S/$c/data" -m fast -w stop >/dev/null && echo "$c stopped"
done
