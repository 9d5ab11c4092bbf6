#!/usr/bin/env bash
# Runs the dnc-admin CLI inside the cluster, in a short-lived pod of the platform release, and
# removes the pod when the command ends. The pod itself only waits (70 minutes: the longest command, a
# registry load, may take 60); the command
# runs in it through `kubectl exec`, whose output the container runtime does not write to the node's
# container log: `key create` prints an API key and `user invite` a one-time link, and a pod's own
# output is kept in that log, read by log shippers and by anyone allowed `pods/log` (a review,
# 2026-12-05). The pod carries the labels the chart's NetworkPolicies
# allow to reach the admin ports of admission, quota, the job scheduler, the dashboard and the adapters
# (networkPolicy.adminAccess), authenticates with the operator certificate (the Secret the chart's
# tls.operator Certificate writes, or DNC_OPERATOR_SECRET), and runs with the same hardened security
# context as the services. Every call it makes is written in the audit log of the service it calls.
#
#   deploy/dnc-admin.sh org create --name "Acme"
#   deploy/dnc-admin.sh registry load --country co --file - \
#     --expect-lines "$(awk 'END{print NR}' registry-co.txt)" < registry-co.txt
#
# A load from stdin needs its line count (--expect-lines): Ctrl-C or a dropped connection ends the
# command's stdin as cleanly as the file's end, and only the count tells a cut upload from a whole one.
#
# Environment: DNC_NAMESPACE (default dnc), DNC_RELEASE (platform release, default dnc-scrub),
# DNC_IMAGE (default: the image the release's admission Deployment runs), DNC_OPERATOR_SECRET
# (default <release>-operator-tls), DNC_TRUST_DOMAIN (default dnc.internal).
set -euo pipefail

ns=${DNC_NAMESPACE:-dnc}
release=${DNC_RELEASE:-dnc-scrub}
# Same rule as the chart's fullname helper.
if [[ $release == *dnc-scrub* ]]; then full=$release; else full=$release-dnc-scrub; fi
image=${DNC_IMAGE:-$(kubectl -n "$ns" get deployment "$full-admission" \
  -o jsonpath='{.spec.template.spec.containers[0].image}')}
name=dnc-admin-$(date +%s)-$RANDOM
operator_secret=${DNC_OPERATOR_SECRET:-$full-operator-tls}
trust_domain=${DNC_TRUST_DOMAIN:-dnc.internal}
admin() { printf 'https://%s-%s.%s.svc:50052' "$full" "$1" "$ns"; }

overrides=$(
  cat <<JSON
{
  "apiVersion": "v1",
  "spec": {
    "automountServiceAccountToken": false,
    "enableServiceLinks": false,
    "securityContext": {
      "runAsNonRoot": true, "runAsUser": 1000, "runAsGroup": 1000, "fsGroup": 1000,
      "seccompProfile": {"type": "RuntimeDefault"}
    },
    "containers": [{
      "name": "$name",
      "image": "$image",
      "command": ["node", "-e", "setTimeout(() => {}, 4200000)"],
      "env": [
        {"name": "DNC_ADMISSION_ADMIN_ADDR", "value": "$(admin admission)"},
        {"name": "DNC_QUOTA_ADMIN_ADDR", "value": "$(admin quota)"},
        {"name": "DNC_JOBS_ADMIN_ADDR", "value": "$(admin job-scheduler)"},
        {"name": "DNC_DASHBOARD_ADDR", "value": "$(admin dashboard)"},
        {"name": "DNC_TLS_DIR", "value": "/var/run/dnc/tls"},
        {"name": "DNC_TRUST_DOMAIN", "value": "$trust_domain"}
      ],
      "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
      "securityContext": {
        "allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true, "runAsNonRoot": true,
        "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}
      },
      "volumeMounts": [
        {"name": "tmp", "mountPath": "/tmp"},
        {"name": "tls", "mountPath": "/var/run/dnc/tls", "readOnly": true}
      ]
    }],
    "volumes": [
      {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}},
      {"name": "tls", "secret": {"secretName": "$operator_secret", "defaultMode": 288}}
    ]
  }
}
JSON
)

# The pod goes at once when the command ends or the script is stopped: a command cut off mid-upload is
# killed with it (1 s), before it could send what it read as a whole load.
trap 'kubectl -n "$ns" delete pod "$name" --grace-period=1 --wait=false --ignore-not-found >/dev/null 2>&1 || true' EXIT
kubectl -n "$ns" run "$name" --quiet --restart=Never --image="$image" \
  --labels="app.kubernetes.io/name=dnc-scrub,app.kubernetes.io/instance=$release,app.kubernetes.io/component=admin" \
  --overrides="$overrides" >/dev/null
kubectl -n "$ns" wait --for=condition=Ready "pod/$name" --timeout=120s >/dev/null
set +e
kubectl -n "$ns" exec -i "$name" -- node packages/admin-cli/dist/main.js "$@"
status=$?
set -e
exit "$status"
