#!/bin/sh
# The live demo: a generated fleet of three member clusters served by `fedsched simulate`
# (HTTPS, bearer tokens, acting as the GitOps agent for ./out-live), a policy repository with
# their Cluster objects and the demo's web application, and the daemon polling them.
# Everything lives under ./live-demo and ./out-live; Ctrl-C stops both processes.
set -eu
cd "$(dirname "$0")/.."
cargo build -q
# Where cargo put it: CARGO_TARGET_DIR when set, else ./target.
bin="${CARGO_TARGET_DIR:-target}/debug/fedsched"
rm -rf live-demo out-live
mkdir -p live-demo/policies/clusters live-demo/policies/apps
"$bin" simulate --generate 3 --nodes 6 --pods 40 --out live-demo/fleet
"$bin" simulate --fleet live-demo/fleet --listen 127.0.0.1:0 --listen-http 127.0.0.1:0 --apply out-live &
sim=$!
trap 'kill $sim 2>/dev/null' EXIT INT TERM
while [ ! -f live-demo/fleet/.simulator/endpoints.json ]; do sleep 0.2; done
cp live-demo/fleet/.simulator/clusters/*.yaml live-demo/policies/clusters/
cat > live-demo/policies/apps/web.yaml <<'YAML'
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 12
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx, resources: {requests: {cpu: 500m, memory: 256Mi}}}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: web}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: web, namespace: shop}
  - {apiVersion: v1, kind: Namespace, name: shop}
  placement:
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference: {dynamicWeight: AvailableReplicas}
YAML
{
  echo 'policy_dir = "policies"'
  echo 'output_dir = "../out-live"'
  echo 'state_dir = "state"'
  printf '[reconcile]\ninterval = "5s"\n[log]\nformat = "text"\n'
  cat live-demo/fleet/.simulator/fedsched.toml
} > live-demo/fedsched.toml
echo "kubectl: kubectl --kubeconfig live-demo/fleet/.simulator/kubeconfig --context member-000 get pods -n shop"
"$bin" run -c live-demo/fedsched.toml
