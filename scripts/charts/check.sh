#!/usr/bin/env bash
# Chart and alert checks for charts/dnc-scrub and charts/dnc-registry-adapter.
#
#   1. helm lint --strict and helm template of both charts with default values, every
#      ci/*-values.yaml and the deploy/ values files (the adapter, which has no default country,
#      once per live country; and it must refuse to render without one);
#   2. kubeconform -strict of every rendered manifest (and deploy/*/datastores.yaml) against
#      offline schemas of the oldest (chart kubeVersion floor) and the newest supported
#      Kubernetes, plus the CRDs we render (scripts/charts/crd-schemas);
#   3. helm-unittest suites of both charts;
#   4. promtool check rules + promtool test rules of the alert rules, and a runbook per alert;
#   5. each chart's README.md is what helm-docs generates from README.md.gotmpl and values.yaml
#      (`scripts/charts/check.sh --write-docs` regenerates them and exits);
#   6. the NATS users of deploy/*/nats-values.yaml match the permissions in the code.
#
# Tools are built from the Go module proxy (and promtool from Debian's prometheus package) into
# a cache directory on first use; later runs reuse them. Needs: bash, go, node, and apt-get (as
# root or with sudo) only when promtool is missing. Override the cache with DNC_CHART_TOOLS_DIR.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE=${DNC_CHART_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/dnc-charts}
BIN=$CACHE/bin

HELM_VERSION=v3.21.3 # the Helm line helm-unittest v1.1.2 renders with
HELM_UNITTEST_VERSION=v1.1.2
KUBECONFORM_VERSION=v0.8.0
HELM_DOCS_VERSION=v1.14.2
# Schemas come from client-go's typed schema: v0.27 = Kubernetes 1.27 (Chart.yaml kubeVersion
# floor), v0.36 = Kubernetes 1.36 (newest).
KUBE_SCHEMA_VERSIONS=("1.27.0:v0.27.16" "1.36.0:v0.36.2")

PLATFORM_CHART=$ROOT/charts/dnc-scrub
ADAPTER_CHART=$ROOT/charts/dnc-registry-adapter
CRD_SCHEMAS=$ROOT/scripts/charts/crd-schemas

passed=0
failed=0
failures=()
start_all=$(date +%s)

step() { printf '\n== %s\n' "$*"; }
ok() {
  passed=$((passed + 1))
  printf 'ok   %s\n' "$*"
}
fail() {
  failed=$((failed + 1))
  failures+=("$*")
  printf 'FAIL %s\n' "$*"
}

# ---------------------------------------------------------------------------------------------
step "tools (cache: $CACHE)"
mkdir -p "$BIN"
export PATH="$BIN:$PATH"
command -v go >/dev/null || {
  echo "go is required (the tools are built from the Go module proxy)" >&2
  exit 1
}
export GOFLAGS=-trimpath

# Installs a Go command once per version; a stamp file records the version that is installed.
go_install() {
  local name=$1 pkg=$2 version=$3
  if [[ -x $BIN/$name && -f $BIN/.$name-$version ]]; then return; fi
  echo "installing $name $version"
  GOBIN=$BIN go install -ldflags='-s -w' "$pkg@$version"
  rm -f "$BIN/.$name-"*
  touch "$BIN/.$name-$version"
}

module_dir() { go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'; }

t0=$(date +%s)
# promtool (Debian) downloads while the Go tools compile.
promtool_pid=
if ! command -v promtool >/dev/null; then
  echo "installing promtool (Debian package prometheus)"
  (
    sudo_cmd=()
    [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
    apt_install=("${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300
      install -y -q --no-install-recommends prometheus)
    "${apt_install[@]}" >"$CACHE/apt.log" 2>&1 || {
      "${sudo_cmd[@]}" apt-get -o DPkg::Lock::Timeout=300 update -q >>"$CACHE/apt.log" 2>&1
      "${apt_install[@]}" >>"$CACHE/apt.log" 2>&1
    } || {
      cat "$CACHE/apt.log" >&2
      exit 1
    }
  ) &
  promtool_pid=$!
fi

# kubeconform and the schema generator are small; they build beside the Helm tools.
kubeschemas_sum=$(cat "$ROOT/scripts/charts/kubeschemas/"{main.go,go.mod,go.sum} | sha256sum | cut -c1-16)
(
  go_install kubeconform github.com/yannh/kubeconform/cmd/kubeconform "$KUBECONFORM_VERSION"
  go_install helm-docs github.com/norwoodj/helm-docs/cmd/helm-docs "$HELM_DOCS_VERSION"
  if [[ ! -x $BIN/kubeschemas || ! -f $BIN/.kubeschemas-$kubeschemas_sum ]]; then
    echo "building kubeschemas"
    (cd "$ROOT/scripts/charts/kubeschemas" && go build -ldflags='-s -w' -o "$BIN/kubeschemas" .)
    rm -f "$BIN/.kubeschemas-"*
    touch "$BIN/.kubeschemas-$kubeschemas_sum"
  fi
  for pair in "${KUBE_SCHEMA_VERSIONS[@]}"; do
    kube=${pair%%:*} clientgo=${pair##*:}
    dir=$CACHE/schemas/$kube-$kubeschemas_sum
    if [[ ! -f $dir/.done ]]; then
      rm -rf "$dir"
      kubeschemas "$(module_dir "k8s.io/client-go@$clientgo")" "$dir"
      touch "$dir/.done"
    fi
  done
) &
small_tools_pid=$!

# helm-unittest's go.mod has a replace directive, which `go install pkg@version` refuses: build it
# as the main module from its module source, and the helm CLI in the same module, so both share
# one dependency graph and one set of compiled packages (half the cold build time).
if [[ ! -x $BIN/helm-unittest || ! -f $BIN/.helm-unittest-$HELM_UNITTEST_VERSION ||
  ! -x $BIN/helm || ! -f $BIN/.helm-$HELM_VERSION ]]; then
  echo "building helm-unittest $HELM_UNITTEST_VERSION and helm $HELM_VERSION"
  src=$(module_dir "github.com/helm-unittest/helm-unittest@$HELM_UNITTEST_VERSION")
  work=$(mktemp -d)
  cp -R "$src/." "$work" && chmod -R u+w "$work"
  (
    cd "$work"
    go build -ldflags='-s -w' -o "$BIN/helm-unittest" ./cmd/helm-unittest
    # The Helm version helm-unittest v1.1.2 requires; checked so a bump cannot drift silently.
    [[ $(go list -m -f '{{.Version}}' helm.sh/helm/v3) == "$HELM_VERSION" ]]
    go build -mod=mod -o "$BIN/helm" \
      -ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" helm.sh/helm/v3/cmd/helm
  )
  rm -rf "$work"
  rm -f "$BIN/.helm-unittest-"* "$BIN/.helm-"v*
  touch "$BIN/.helm-unittest-$HELM_UNITTEST_VERSION" "$BIN/.helm-$HELM_VERSION"
fi
wait "$small_tools_pid"
[[ -z $promtool_pid ]] || wait "$promtool_pid"
echo "helm $(helm version --template '{{.Version}}'), kubeconform $(kubeconform -v)," \
  "$(promtool --version 2>&1 | head -1) - tools ready in $(($(date +%s) - t0)) s"

# Chart READMEs: generated by helm-docs (values table from the `# --` comments of values.yaml).
helm_docs() { helm-docs --chart-search-root "$1" --skip-version-footer --log-level warning; }
if [[ ${1:-} == --write-docs ]]; then
  helm_docs "$ROOT/charts"
  echo "wrote charts/*/README.md"
  exit 0
fi

# ---------------------------------------------------------------------------------------------
# One rendering = a chart + one values file (or none) + extra --set flags.
renders=()
add_render() { renders+=("$1|$2|$3"); }

add_render "$PLATFORM_CHART" "" ""
for f in "$PLATFORM_CHART"/ci/*-values.yaml "$ROOT"/deploy/*/platform-values.yaml; do
  [[ -e $f ]] && add_render "$PLATFORM_CHART" "$f" ""
done
# The adapter has no default country by design: one release per country.
for country in mx ar co; do add_render "$ADAPTER_CHART" "" "country=$country"; done
for f in "$ADAPTER_CHART"/ci/*-values.yaml; do
  [[ -e $f ]] && add_render "$ADAPTER_CHART" "$f" ""
done
for f in "$ROOT"/deploy/*/adapter-values.yaml; do
  [[ -e $f ]] || continue
  for country in mx ar co; do add_render "$ADAPTER_CHART" "$f" "country=$country"; done
done

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

step "helm lint --strict, helm template, kubeconform -strict"
t0=$(date +%s)
n=0
for r in "${renders[@]}"; do
  IFS='|' read -r chart values setflag <<<"$r"
  args=()
  [[ -n $values ]] && args+=(-f "$values")
  [[ -n $setflag ]] && args+=(--set "$setflag")
  label="$(basename "$chart") ${values#"$ROOT"/}${setflag:+ --set $setflag}"
  [[ -z $values && -z $setflag ]] && label="$(basename "$chart") (default values)"
  [[ -z $values && -n $setflag ]] && label="$(basename "$chart") (default values) --set $setflag"
  n=$((n + 1))
  for pair in "${KUBE_SCHEMA_VERSIONS[@]}"; do
    kube=${pair%%:*}
    if ! lint=$(helm lint --strict --kube-version "$kube" "$chart" "${args[@]}" 2>&1); then
      fail "helm lint [k8s $kube] $label"
      echo "$lint" | sed 's/^/     /'
      continue
    fi
    manifest=$out/$n-$kube.yaml
    if ! helm template "ci-$n" "$chart" --namespace dnc --kube-version "$kube" "${args[@]}" >"$manifest" 2>"$out/err"; then
      fail "helm template [k8s $kube] $label"
      sed 's/^/     /' "$out/err"
      continue
    fi
    if report=$(kubeconform -strict -summary -kubernetes-version "$kube" \
      -schema-location "$CACHE/schemas/$kube-$kubeschemas_sum/{{ .ResourceKind }}{{ .KindSuffix }}.json" \
      -schema-location "$CRD_SCHEMAS/{{ .ResourceKind }}{{ .KindSuffix }}.json" "$manifest" 2>&1); then
      ok "lint + template + kubeconform [k8s $kube] $label: $(echo "$report" | tail -1 | sed 's/.*- //')"
    else
      fail "kubeconform [k8s $kube] $label"
      echo "$report" | sed 's/^/     /'
    fi
  done
done

# Plain manifests shipped under deploy/ (built-in kinds only).
for f in "$ROOT"/deploy/*/datastores.yaml; do
  [[ -e $f ]] || continue
  for pair in "${KUBE_SCHEMA_VERSIONS[@]}"; do
    kube=${pair%%:*}
    if report=$(kubeconform -strict -summary -kubernetes-version "$kube" \
      -schema-location "$CACHE/schemas/$kube-$kubeschemas_sum/{{ .ResourceKind }}{{ .KindSuffix }}.json" "$f" 2>&1); then
      ok "kubeconform [k8s $kube] ${f#"$ROOT"/}: $(echo "$report" | tail -1 | sed 's/.*- //')"
    else
      fail "kubeconform [k8s $kube] ${f#"$ROOT"/}"
      echo "$report" | sed 's/^/     /'
    fi
  done
done

# Every container of the image gets the environment its role's config schema accepts, and nothing its
# role does not read (the services' own schemas, from their build: run after `npm run build`).
if report=$(node "$ROOT/scripts/charts/env-check.mjs" "$out"/*.yaml 2>&1); then
  ok "environment of every rendered container against its role's config schema: $(tail -1 <<<"$report")"
else
  fail "environment of rendered containers against their roles' config schemas"
  echo "$report" | sed 's/^/     /'
fi

# The production releases' PostgreSQL connections at every autoscaler's maximum, mid-rollout, fit the
# production cluster's max_connections.
budget=()
kube=${KUBE_SCHEMA_VERSIONS[-1]%%:*}
rendered=true
helm template dnc-scrub "$PLATFORM_CHART" --namespace dnc --kube-version "$kube" \
  -f "$ROOT/deploy/production/platform-values.yaml" >"$out/budget-platform.yaml" 2>"$out/err" || rendered=false
budget+=("$out/budget-platform.yaml")
for country in mx ar co; do
  helm template "adapter-$country" "$ADAPTER_CHART" --namespace dnc --kube-version "$kube" \
    -f "$ROOT/deploy/production/adapter-values.yaml" \
    --set "country=$country" >"$out/budget-adapter-$country.yaml" 2>>"$out/err" || rendered=false
  budget+=("$out/budget-adapter-$country.yaml")
done
if ! $rendered; then
  fail "production PostgreSQL connection budget: the production releases do not render"
  sed 's/^/     /' "$out/err"
elif report=$(node "$ROOT/scripts/charts/pg-budget.mjs" --cluster "$ROOT/deploy/production/postgres-cluster.yaml" "${budget[@]}" 2>&1); then
  ok "production PostgreSQL connection budget: $(tail -1 <<<"$report")"
else
  fail "production PostgreSQL connection budget"
  echo "$report" | sed 's/^/     /'
fi

# A release without a country must be refused with a message that says what to set.
if err=$(helm template x "$ADAPTER_CHART" 2>&1); then
  fail "dnc-registry-adapter without a country rendered; it must be refused"
elif grep -q "country" <<<"$err"; then
  ok "dnc-registry-adapter without a country is refused"
else
  fail "dnc-registry-adapter without a country failed for another reason: $err"
fi
echo "rendering checks took $(($(date +%s) - t0)) s"

# ---------------------------------------------------------------------------------------------
step "helm-unittest"
for chart in "$PLATFORM_CHART" "$ADAPTER_CHART"; do
  if report=$(helm-unittest --color=false "$chart" 2>&1); then
    ok "helm-unittest $(basename "$chart"): $(grep -E '^Tests:' <<<"$report" | tr -s ' ')"
  else
    fail "helm-unittest $(basename "$chart")"
    echo "$report" | sed 's/^/     /'
  fi
done

# ---------------------------------------------------------------------------------------------
step "promtool"
files=$PLATFORM_CHART/files
if report=$(promtool check rules "$files/alerts.rules.yaml" 2>&1); then
  ok "promtool check rules: $(grep -o '[0-9]* rules found' <<<"$report")"
else
  fail "promtool check rules"
  echo "$report" | sed 's/^/     /'
fi
if report=$(cd "$files" && promtool test rules alerts.test.yaml alerts-snapshot.test.yaml 2>&1); then
  ok "promtool test rules"
else
  fail "promtool test rules"
  echo "$report" | sed 's/^/     /'
fi
# Every dnc_* series the alerts and the dashboard query must be a metric the services define.
if report=$(node -e '
  const fs = require("node:fs");
  const path = require("node:path");
  const [root, ...queried] = process.argv.slice(1);
  const defined = new Set();
  const walk = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory() && !["node_modules", "dist", "test", "gen"].includes(e.name)) walk(p);
      else if (e.isFile() && p.endsWith(".ts") && !p.endsWith(".test.ts")) {
        for (const m of fs.readFileSync(p, "utf8").matchAll(/["\x27](dnc_[a-z0-9_]+)["\x27]/g)) defined.add(m[1]);
      }
    }
  };
  for (const top of ["services", "packages"]) walk(path.join(root, top));
  const base = (n) => n.replace(/_(bucket|count|sum)$/, "");
  const missing = new Set();
  let used = 0;
  for (const f of queried) {
    for (const m of fs.readFileSync(f, "utf8").matchAll(/\b(dnc_[a-z0-9_]+)/g)) {
      if (m[1].startsWith("dnc_scrub")) continue;
      used += 1;
      if (!defined.has(m[1]) && !defined.has(base(m[1]))) missing.add(m[1]);
    }
  }
  if (missing.size) {
    console.log(`not defined by any service: ${[...missing].join(", ")}`);
    process.exit(1);
  }
  console.log(`${used} references, all defined`);' "$ROOT" "$files/alerts.rules.yaml" "$files/dashboard.json" 2>&1); then
  ok "alert and dashboard metrics exist in the services: $report"
else
  fail "alert and dashboard metrics"
  echo "$report" | sed 's/^/     /'
fi
# Every alert links its runbook page, and every page belongs to an alert.
if report=$(node "$ROOT/scripts/charts/check-runbooks.mjs" 2>&1); then
  ok "runbooks: $report"
else
  fail "runbooks"
  echo "$report" | sed 's/^/     /'
fi
# The dashboard must stay loadable JSON.
if report=$(node -e '
  const d = JSON.parse(require("node:fs").readFileSync(process.argv[1], "utf8"));
  if (!Array.isArray(d.panels) || d.panels.length === 0) throw new Error("no panels");
  console.log(`${d.panels.length} panels`);' "$files/dashboard.json" 2>&1); then
  ok "dashboard.json loads: $report"
else
  fail "dashboard.json"
  echo "$report" | sed 's/^/     /'
fi

# ---------------------------------------------------------------------------------------------
step "helm-docs"
docs=$(mktemp -d)
cp -R "$PLATFORM_CHART" "$ADAPTER_CHART" "$docs/"
if ! report=$(helm_docs "$docs" 2>&1); then
  fail "helm-docs"
  echo "$report" | sed 's/^/     /'
else
  for chart in "$PLATFORM_CHART" "$ADAPTER_CHART"; do
    name=$(basename "$chart")
    if diff -u "$chart/README.md" "$docs/$name/README.md" >"$docs/$name.diff" 2>&1; then
      ok "$name/README.md is current (helm-docs $HELM_DOCS_VERSION)"
    else
      fail "$name/README.md is stale: run scripts/charts/check.sh --write-docs"
      sed 's/^/     /' "$docs/$name.diff" | head -40
    fi
  done
fi
rm -rf "$docs"

# ---------------------------------------------------------------------------------------------
step "NATS users and permissions"
if report=$(node "$ROOT/scripts/charts/nats-authorization.mjs" --check 2>&1); then
  ok "deploy/*/nats-values.yaml users match packages/kit/src/security/nats-permissions.ts"
else
  fail "NATS users of deploy/*/nats-values.yaml"
  echo "$report" | sed 's/^/     /'
fi

# ---------------------------------------------------------------------------------------------
printf '\nchart checks took %s s\n' "$(($(date +%s) - start_all))"
for f in "${failures[@]}"; do printf 'failed: %s\n' "$f"; done
printf 'charts: %d passed, %d failed\n' "$passed" "$failed"
[[ $failed -eq 0 ]]
