{{- define "dnc-registry-adapter.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Release-qualified name; releases are named per country (adapter-mx), so the name needs no suffix. */}}
{{- define "dnc-registry-adapter.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "dnc-registry-adapter.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Selector labels: name, instance and component only. */}}
{{- define "dnc-registry-adapter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "dnc-registry-adapter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: registry-adapter
{{- end }}

{{- define "dnc-registry-adapter.labels" -}}
helm.sh/chart: {{ include "dnc-registry-adapter.chart" . }}
{{ include "dnc-registry-adapter.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: dnc-scrub
dnc-scrub/country: {{ include "dnc-registry-adapter.country" . }}
{{- end }}

{{- define "dnc-registry-adapter.country" -}}
{{- required "country is required: install one release per country, e.g. --set country=mx" .Values.country }}
{{- end }}

{{- define "dnc-registry-adapter.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "dnc-registry-adapter.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "dnc-registry-adapter.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/* Termination budget: preStop delay + drain (DNC_SHUTDOWN_TIMEOUT_MS) + margin. */}}
{{- define "dnc-registry-adapter.terminationGracePeriodSeconds" -}}
{{- $needed := add (int .Values.lifecycle.preStopSleepSeconds) (div (int .Values.config.shutdownTimeoutMs) 1000) 5 }}
{{- $grace := int .Values.lifecycle.terminationGracePeriodSeconds }}
{{- if lt $grace (int $needed) }}
{{- fail (printf "lifecycle.terminationGracePeriodSeconds (%d) must be at least preStopSleepSeconds + shutdownTimeoutMs/1000 + 5 = %d" $grace (int $needed)) }}
{{- end }}
{{- $grace }}
{{- end }}

{{/* Workload identity of this adapter: registry-adapter-<country> (its NATS user too). */}}
{{- define "dnc-registry-adapter.identity" -}}
{{- printf "registry-adapter-%s" (include "dnc-registry-adapter.country" .) }}
{{- end }}

{{- define "dnc-registry-adapter.tlsSecretName" -}}
{{- if .Values.tls.existingSecret }}
{{- .Values.tls.existingSecret }}
{{- else if .Values.tls.certManager.enabled }}
{{- printf "%s-tls" (include "dnc-registry-adapter.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- fail "tls: the adapter has no certificate: enable tls.certManager or set tls.existingSecret" }}
{{- end }}
{{- end }}

{{/* The certificate Secret of the `helm test` Pod (identity `conformance`). */}}
{{- define "dnc-registry-adapter.testTlsSecretName" -}}
{{- if .Values.tests.existingTlsSecret }}
{{- .Values.tests.existingTlsSecret }}
{{- else if .Values.tls.certManager.enabled }}
{{- printf "%s-helm-test-tls" (include "dnc-registry-adapter.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- fail "tests: the helm test Pod has no certificate: enable tls.certManager or set tests.existingTlsSecret (identity conformance), or disable tests" }}
{{- end }}
{{- end }}
