#!/usr/bin/env bash
# The environment's life cycle: a busy port is refused by name, a half-started set is torn down, three
# clusters come up, a second `up` changes nothing, the state of an older devenv is upgraded by `up`, a
# crashed component is started again by its supervisor (or by `up` when the supervisor is gone too), and
# `down` leaves no process, port or state behind.
source "$(dirname "$0")/../lib.sh"
export CLIQO_DEV_DIR=$E2E_STATE
BASE=${CLIQO_DEV_BASE_PORT:?}
work=$(mktemp -d)
listener=
cleanup() {
  [ -n "$listener" ] && kill "$listener" 2>/dev/null
  "$CLIQOCTL" dev down >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
"$CLIQOCTL" dev down >/dev/null 2>&1 || true # a previous interrupted run

no_leftovers() { # what
  [ -e "$E2E_STATE/clusters" ] && fail "$1: state left in $E2E_STATE"
  local p
  for ((p = BASE; p < BASE + 30; p++)); do
    [ "$p" = "$busy_port" ] && continue
    ss -Htln "sport = :$p" | grep_q . && fail "$1: port $p still listens"
  done
  # Any process whose command line names the state directory is a leak.
  if grep -lsF -- "$E2E_STATE/" /proc/[0-9]*/cmdline >/dev/null 2>&1; then
    for f in $(grep -lsF -- "$E2E_STATE/" /proc/[0-9]*/cmdline); do
      p=${f#/proc/}; p=${p%/cmdline}
      pid_running "$p" && fail "$1: process $p still runs: $(tr '\0' ' ' <"$f" | cut -c1-100)"
    done
  fi
  return 0
}

# 1. A port in use is named and nothing starts.
busy_port=$((BASE + 10))
python3 -c 'import socket,sys,time; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); time.sleep(300)' "$busy_port" &
listener=$!
wait_for 10 "test listener on $busy_port" bash -c "ss -Htln 'sport = :$busy_port' | grep_q ."
out=$("$CLIQOCTL" dev up --clusters 2 2>&1) && fail "up succeeded with port $busy_port taken"
grep -q "port $busy_port (127.0.0.1) is already in use" <<<"$out" || fail "error does not name port $busy_port: $out"
no_leftovers "busy port"
kill "$listener"; wait "$listener" 2>/dev/null || true; listener=
busy_port=
say "busy port refused by name"
out=$(CLIQO_DEV_APF=maybe "$CLIQOCTL" dev up --clusters 1 2>&1) && fail "up succeeded with CLIQO_DEV_APF=maybe"
grep -q "CLIQO_DEV_APF must be 0 or 1, not maybe" <<<"$out" || fail "a bad CLIQO_DEV_APF is not named: $out"
out=$(CLIQO_DEV_GOMAXPROCS=0 "$CLIQOCTL" dev up --clusters 1 2>&1) && fail "up succeeded with CLIQO_DEV_GOMAXPROCS=0"
grep -q "CLIQO_DEV_GOMAXPROCS must be a number of cores, not 0" <<<"$out" || fail "a bad CLIQO_DEV_GOMAXPROCS is not named: $out"
no_leftovers "bad settings"

# 2. A component that fails half-way: everything started so far is torn down.
mkdir -p "$work/bin"
ln -s "$CLIQO_KUBE_BIN_DIR/kube-apiserver" "$work/bin/kube-apiserver"
ln -s "$CLIQO_KUBE_BIN_DIR/kube-controller-manager" "$work/bin/kube-controller-manager"
printf '#!/bin/sh\necho "scheduler: simulated crash at start-up" >&2\nexit 3\n' >"$work/bin/kube-scheduler"
chmod +x "$work/bin/kube-scheduler"
out=$("$CLIQOCTL" dev up --clusters 1 --kube-bin-dir "$work/bin" 2>&1) && fail "up succeeded with a crashing scheduler"
grep -q 'kube-scheduler failed to start' <<<"$out" || fail "error does not name the scheduler: $out"
grep -q 'simulated crash at start-up' <<<"$out" || fail "error does not show the scheduler's log: $out"
grep -q 'tearing down' <<<"$out" || fail "no teardown reported: $out"
no_leftovers "half-started"
say "half-started set torn down"

# 3. Three clusters.
t0=$(date +%s%N)
"$CLIQOCTL" dev up --clusters 3 || fail "up --clusters 3 failed"
t1=$(date +%s%N)
say "3 clusters up in $(((t1 - t0) / 1000000)) ms"
for c in cluster-1 cluster-2 cluster-3; do
  [ "$(kc "$c" get --raw /readyz)" = ok ] || fail "$c not ready"
done
"$CLIQOCTL" dev status >/dev/null || fail "status unhealthy after up"
pids_before=$(cat "$E2E_STATE"/*/*.pid | sort | tr '\n' ' ')

# 4. Idempotent: a second up changes nothing; a different count is refused.
out=$("$CLIQOCTL" dev up --clusters 3 2>&1) || fail "second up failed: $out"
grep -q 'already up' <<<"$out" || fail "second up did not say it was already up: $out"
[ "$(cat "$E2E_STATE"/*/*.pid | sort | tr '\n' ' ')" = "$pids_before" ] || fail "second up restarted processes"
out=$("$CLIQOCTL" dev up --clusters 2 2>&1) && fail "up with another count succeeded"
grep -q "run 'cliqoctl dev down' first" <<<"$out" || fail "count change not explained: $out"
say "second up is a no-op"

# 4b. The API server's webhook client certificate (docs/security.md): a CA of its own per cluster, named
# in clusters.json, used by the API server's webhook plugins. A state made by an older devenv (here: its
# files removed) gets it at the next `up`, which restarts that cluster's API server only.
for c in cluster-1 cluster-2 cluster-3; do
  p="$E2E_STATE/$c/pki"
  openssl verify -CAfile "$p/webhook-client-ca.crt" -purpose sslclient "$p/webhook-client.crt" >/dev/null ||
    fail "$c: the webhook client certificate does not verify against its CA"
  [ "$(openssl x509 -in "$p/webhook-client.crt" -noout -subject -nameopt RFC2253)" = "subject=CN=kube-apiserver-webhook-client" ] ||
    fail "$c: the webhook client certificate's subject: $(openssl x509 -in "$p/webhook-client.crt" -noout -subject)"
  openssl verify -CAfile "$p/webhook-client-ca.crt" "$p/admin.crt" >/dev/null 2>&1 &&
    fail "$c: the webhook client CA also signs the admin's certificate"
  grep_q -F "\"webhookClientCA\": \"$p/webhook-client-ca.crt\"" "$E2E_STATE/clusters.json" ||
    fail "clusters.json does not name the webhook client CA of $c"
  tr '\0' '\n' <"/proc/$(cat "$E2E_STATE/$c/kube-apiserver.pid")/cmdline" | grep_q -x -- --admission-control-config-file ||
    fail "$c: kube-apiserver runs without --admission-control-config-file"
done
old_ca=$(cat "$E2E_STATE/cluster-2/pki/webhook-client-ca.crt")
rm -f "$E2E_STATE/cluster-2/admission-config.yaml" "$E2E_STATE/cluster-2/webhook-client.kubeconfig" \
  "$E2E_STATE"/cluster-2/pki/webhook-client*
out=$("$CLIQOCTL" dev up --clusters 3 2>&1) || fail "up of an older state failed: $out"
grep -q 'cluster-2: restarting kube-apiserver' <<<"$out" || fail "up did not restart cluster-2's API server: $out"
grep -q 'cluster-[13]: restarting' <<<"$out" && fail "up restarted another cluster's API server: $out"
[ -s "$E2E_STATE/cluster-2/pki/webhook-client-ca.crt" ] && [ -s "$E2E_STATE/cluster-2/admission-config.yaml" ] ||
  fail "up did not make cluster-2's webhook client files"
[ "$(cat "$E2E_STATE/cluster-2/pki/webhook-client-ca.crt")" != "$old_ca" ] || fail "cluster-2 kept the removed CA"
[ "$(kc cluster-2 get --raw /readyz)" = ok ] || fail "cluster-2 not ready after the upgrade"
for f in "$E2E_STATE"/cluster-[13]/*.pid "$E2E_STATE"/cluster-2/{etcd,kube-scheduler,kube-controller-manager}.pid; do
  grep_q -x "$(cat "$f")" <<<"$(tr ' ' '\n' <<<"$pids_before")" || fail "up restarted $(basename "$f" .pid) of $(basename "$(dirname "$f")")"
done
pids_before=$(cat "$E2E_STATE"/*/*.pid | sort | tr '\n' ' ')
out=$("$CLIQOCTL" dev up --clusters 3 2>&1) || fail "third up failed: $out"
[ "$(cat "$E2E_STATE"/*/*.pid | sort | tr '\n' ' ')" = "$pids_before" ] || fail "up after the upgrade restarted processes"
say "webhook client certificates; an older state upgraded by up (cluster-2's API server alone restarted)"

# 5. A crashed apiserver is started again by its supervisor, as a kubelet restarts a container; the data stays.
kc cluster-3 create namespace e2e-kept >/dev/null || fail "cannot create a namespace on cluster-3"
crashed=$(cat "$E2E_STATE/cluster-3/kube-apiserver.pid")
kill -KILL "$crashed"
restarted() {
  local p
  p=$(cat "$E2E_STATE/cluster-3/kube-apiserver.pid" 2>/dev/null) && [ "$p" != "$crashed" ] &&
    [ "$(kc cluster-3 --request-timeout=2s get --raw /readyz 2>/dev/null)" = ok ]
}
wait_for 60 "cluster-3's apiserver started again by its supervisor" restarted
grep_q 'kube-apiserver exited with status 137; starting it again in 1 s' "$E2E_STATE/cluster-3/logs/kube-apiserver.log" ||
  fail "the supervisor did not log the restart"
kc cluster-3 get namespace e2e-kept >/dev/null || fail "cluster-3 lost its data in the restart"
"$CLIQOCTL" dev status >/dev/null || fail "status unhealthy after the supervisor's restart"
say "crashed apiserver started again by its supervisor"
# When the supervisor is gone too: status says so, up restarts it alone; the other processes and the data stay.
kill -KILL "$(cat "$E2E_STATE/cluster-3/kube-apiserver.supervisor.pid")" "$(cat "$E2E_STATE/cluster-3/kube-apiserver.pid")"
out=$("$CLIQOCTL" dev status 2>&1) && fail "status healthy with a dead apiserver"
grep -q 'kube-apiserver.*is gone' <<<"$out" || fail "status does not report the dead apiserver: $out"
# (the recovering up with other settings of APF and GOMAXPROCS than the environment's: the ones chosen at
# its first up win, as for any restart)
apf=$(<"$E2E_STATE/apf") gmp=$(cat "$E2E_STATE/gomaxprocs" 2>/dev/null) || gmp=""
out=$(CLIQO_DEV_APF=$((1 - apf)) CLIQO_DEV_GOMAXPROCS=7 "$CLIQOCTL" dev up --clusters 3 2>&1) ||
  fail "up did not recover the environment: $out"
grep -q 'cluster-3/kube-apiserver is not healthy (process [0-9]* is gone): restarting it' <<<"$out" ||
  fail "up did not say what it restarted: $out"
grep -q 'tearing it down' <<<"$out" && fail "up tore the environment down to recover one component: $out"
"$CLIQOCTL" dev status >/dev/null || fail "status unhealthy after recovery"
[ "$(kc cluster-3 get --raw /readyz)" = ok ] || fail "cluster-3 not ready after recovery"
kc cluster-3 get namespace e2e-kept >/dev/null || fail "cluster-3 lost its data in the recovery"
for f in "$E2E_STATE"/cluster-[12]/*.pid "$E2E_STATE"/cluster-3/{etcd,kube-scheduler,kube-controller-manager}.pid; do
  grep_q -x "$(cat "$f")" <<<"$(tr ' ' '\n' <<<"$pids_before")" || fail "up restarted $(basename "$f" .pid) of $(basename "$(dirname "$f")")"
done
p=$(cat "$E2E_STATE/cluster-3/kube-apiserver.pid")
apf_off=0
tr '\0' '\n' <"/proc/$p/cmdline" | grep_q -x -- --enable-priority-and-fairness=false && apf_off=1
[ "$apf_off" = $((1 - apf)) ] ||
  fail "the restarted API server has APF $([ "$apf_off" = 1 ] && echo off || echo on); the environment was brought up with CLIQO_DEV_APF=$apf"
[ "$(tr '\0' '\n' <"/proc/$p/environ" | sed -n 's/^GOMAXPROCS=//p')" = "$gmp" ] ||
  fail "the restarted API server's GOMAXPROCS is not the environment's (${gmp:-unset})"
say "crashed apiserver restarted alone by up"

# 6. A cluster that disappears and comes back (stop/start keep its state).
kc cluster-2 create namespace e2e-survives >/dev/null
"$CLIQOCTL" dev stop --cluster cluster-2 || fail "stop cluster-2 failed"
expect_fail "cluster-2 still answers after stop" kc cluster-2 --request-timeout=3s get --raw /readyz
[ "$(kc cluster-1 get --raw /readyz)" = ok ] || fail "cluster-1 affected by stopping cluster-2"
out=$("$CLIQOCTL" dev status 2>&1) && fail "status healthy with cluster-2 stopped"
expect_fail "stop without --cluster" "$CLIQOCTL" dev stop
expect_fail "stop of an unknown component" "$CLIQOCTL" dev stop --cluster cluster-2 --component kubelet
"$CLIQOCTL" dev start --cluster cluster-2 || fail "start cluster-2 failed"
"$CLIQOCTL" dev status >/dev/null || fail "status unhealthy after start"
kc cluster-2 get namespace e2e-survives >/dev/null || fail "cluster-2 lost its data across stop/start"
# One component (the scheduler: the API server's own restart is up's, above): the others keep running.
sched_pid=$(cat "$E2E_STATE/cluster-1/kube-scheduler.pid")
"$CLIQOCTL" dev stop --cluster cluster-1 --component kube-scheduler || fail "stop one component failed"
pid_running "$sched_pid" && fail "the scheduler still runs after its stop"
for comp in etcd kube-apiserver kube-controller-manager; do
  pid_running "$(cat "$E2E_STATE/cluster-1/$comp.pid")" || fail "stopping the scheduler stopped $comp"
done
out=$("$CLIQOCTL" dev status -o json 2>&1) && fail "status healthy with cluster-1's scheduler stopped"
[ "$(jq -r '[.clusters[].components[] | select(.healthy == false)] | length' <<<"$out")" = 1 ] &&
  [ "$(jq -r '.clusters[] | select(.name == "cluster-1") | .components[] | select(.name == "kube-scheduler") | .healthy'     <<<"$out")" = false ] || fail "status does not name the stopped scheduler alone: $out"
"$CLIQOCTL" dev start --cluster cluster-1 || fail "start of the stopped scheduler failed"
"$CLIQOCTL" dev status >/dev/null || fail "status unhealthy after the scheduler's start"
[ "$(cat "$E2E_STATE/cluster-1/kube-scheduler.pid")" != "$sched_pid" ] || fail "the scheduler was not started again"
say "stop/start of a cluster and of one component"

# 7. Down leaves nothing, etcd's data included where it is kept outside the state directory.
datadirs=()
if [ -n "${CLIQO_DEV_ETCD_DIR:-}" ]; then
  for c in cluster-1 cluster-2 cluster-3; do
    d=$(readlink "$E2E_STATE/$c/etcd-data") || fail "$c's etcd-data is not a link into $CLIQO_DEV_ETCD_DIR"
    [ "$(dirname "$d")" = "$CLIQO_DEV_ETCD_DIR" ] && [ -d "$d/member" ] || fail "$c's etcd data is not in $d"
    datadirs+=("$d")
  done
fi
"$CLIQOCTL" dev down || fail "down failed"
no_leftovers "down"
for d in "${datadirs[@]}"; do [ -e "$d" ] && fail "down left etcd's data in $d"; done
out=$("$CLIQOCTL" dev down 2>&1) || fail "second down failed: $out"
pass "life cycle complete"
