#!/usr/bin/env bash
# What a RolloutPolicy costs the poll (issue 52, "poll only what is needed, at the cost budget of
# the existing watches"): one daemon on a `fedsched simulate` fleet with --apply, W Deployments
# over C members, three phases of SECONDS each in one run — no RolloutPolicy; one in force over
# every Deployment with no rollout under way; a rollout of every Deployment gated at its canary
# (each new image never turns Ready there, so the gate stays shut and the rollout stays
# Progressing: the canary and the next stage are read). For each phase, per member poll
# round: the simulator's requests and GET body bytes over all members, its watch bytes, and the
# workload objects read (`/admin/stats`: requests, getBytes, watchBytes, objectReads; rounds
# from the daemon's fedsched_polls_total of member-000).
#
# Usage: tools/rollout-poll-cost.sh BIN [CLUSTERS] [WORKLOADS] [SECONDS]
set -euo pipefail
B=$(realpath "$1")
C=${2:-20}
W=${3:-200}
T=${4:-60}
D=$(mktemp -d /tmp/rollout-poll-cost.XXXXXX)
PORT=$((20000 + RANDOM % 20000))
SIM=""
DAEMON=""
cleanup() {
  [ -n "$DAEMON" ] && kill "$DAEMON" 2>/dev/null || true
  [ -n "$SIM" ] && kill "$SIM" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$D"
}
trap cleanup EXIT

"$B" simulate --generate "$C" --nodes 10 --pods 20 --out "$D/fleet" >/dev/null
FEDSCHED_LOG=warn "$B" simulate --fleet "$D/fleet" --listen 127.0.0.1:0 --listen-http 127.0.0.1:0 \
  --apply "$D/out" --apply-interval 500ms >/dev/null 2>&1 &
SIM=$!
for _ in $(seq 100); do [ -s "$D/fleet/.simulator/endpoints.json" ] && break; sleep 0.2; done
ADMIN=$(cat "$D/fleet/.simulator/admin-token")
SIMHTTP=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["http"])' "$D/fleet/.simulator/endpoints.json")
admin() { curl -s -X "$1" -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' ${3:+-d "$3"} "http://$SIMHTTP$2"; }

mkdir -p "$D/repo/apps"
cp -r "$D/fleet/.simulator/clusters" "$D/repo/clusters"
apps() { # $1: image tag
  {
    printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n'
    for i in $(seq -w 1 "$W"); do
      printf -- '---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: w%s, namespace: shop}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: w%s}}\n  template:\n    metadata: {labels: {app: w%s}}\n    spec:\n      containers: [{name: c, image: "w:%s", resources: {requests: {cpu: 10m, memory: 8Mi}}}]\n' "$i" "$i" "$i" "$1"
    done
    printf -- '---\napiVersion: policy.karmada.io/v1alpha1\nkind: ClusterPropagationPolicy\nmetadata: {name: all}\nspec:\n  resourceSelectors:\n  - {apiVersion: v1, kind: Namespace, name: shop}\n  - {apiVersion: apps/v1, kind: Deployment, namespace: shop}\n  placement:\n    replicaScheduling: {replicaSchedulingType: Duplicated}\n'
  } >"$D/repo/apps/apps.yaml.tmp"
  mv "$D/repo/apps/apps.yaml.tmp" "$D/repo/apps/apps.yaml"
}
ROLLOUT='apiVersion: fedsched.io/v1alpha1
kind: RolloutPolicy
metadata: {name: waves, namespace: shop}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]
  stages:
  - {name: canary, clusterAffinity: {clusterNames: [member-000]}}
  - {name: wave, maxConcurrency: 25%}
  minSuccessTime: 10m
'
apps 1
cat >"$D/fedsched.toml" <<EOF
policy_dir = "$D/repo"
output_dir = "$D/out"
state_dir = "$D/state"
[reconcile]
interval = "2s"
debounce = "100ms"
[poll]
timeout = "5s"
[http]
listen = "127.0.0.1:$PORT"
[log]
format = "json"
$(cat "$D/fleet/.simulator/fedsched.toml")
EOF
FEDSCHED_LOG=warn "$B" run -c "$D/fedsched.toml" >/dev/null 2>"$D/daemon.log" &
DAEMON=$!

rounds() { curl -s "http://127.0.0.1:$PORT/metrics" | awk '/^fedsched_polls_total\{cluster="member-000",outcome="ok"\}/ {print $2}'; }
stats() { admin GET /admin/stats; }
measure() { # $1: phase name
  local a b r0 r1
  a=$(stats); r0=$(rounds)
  sleep "$T"
  b=$(stats); r1=$(rounds)
  python3 - "$1" "$C" "${r0:-0}" "${r1:-0}" "$a" "$b" <<'PY'
import json, sys
phase, c, r0, r1, a, b = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), json.loads(sys.argv[5]), json.loads(sys.argv[6])
rounds = max(r1 - r0, 1)
def total(doc, key):
    v = doc.get(key, {})
    return sum(v.values()) if isinstance(v, dict) else v
d = {k: total(b, k) - total(a, k) for k in ["requests", "getBytes", "watchBytes", "objectReads"]}
print(f"{phase:<34} rounds {rounds:5.0f}  per round over {c} members: requests {d['requests']/rounds:8.1f}  "
      f"GET bytes {d['getBytes']/rounds:10.0f}  watch bytes {d['watchBytes']/rounds:9.0f}  objects read {d['objectReads']/rounds:7.1f}")
PY
}

# Settle: every Deployment placed and applied, the watches open.
for _ in $(seq 120); do
  [ "$(ls "$D/out/member-000/shop" 2>/dev/null | grep -c deployment)" -ge "$W" ] && break
  sleep 1
done
sleep 10
echo "fedsched $("$B" --version 2>/dev/null | head -1), $C members, $W Deployments, ${T}s a phase"
measure "no RolloutPolicy"
printf '%s' "$ROLLOUT" >"$D/repo/apps/rollout.yaml"
sleep 10
measure "RolloutPolicy, no rollout under way"
admin PUT /admin/clusters/member-000/images '{"neverReady": ["w:2"]}' >/dev/null
apps 2
sleep 10
measure "rollout gated at the canary"
