{{/* Chart name, truncated to the 63 characters a label value allows. */}}
{{- define "dnc-scrub.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Release-qualified name. Component names are appended to it, so it keeps room for the longest
suffix ("-job-scheduler", 14 characters) inside the 63 characters of a DNS label.
*/}}
{{- define "dnc-scrub.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 48 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 48 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 48 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Name of one component's objects: dict "root" $ "component" "gateway". */}}
{{- define "dnc-scrub.componentName" -}}
{{- printf "%s-%s" (include "dnc-scrub.fullname" .root) .component | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "dnc-scrub.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Selector labels: name, instance and component only, so they never change across upgrades. */}}
{{- define "dnc-scrub.selectorLabels" -}}
app.kubernetes.io/name: {{ include "dnc-scrub.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* Labels of the release's pods regardless of component (for policies that cover them all). */}}
{{- define "dnc-scrub.releaseSelectorLabels" -}}
app.kubernetes.io/name: {{ include "dnc-scrub.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Full labels of an object: dict "root" $ "component" "gateway". */}}
{{- define "dnc-scrub.labels" -}}
helm.sh/chart: {{ include "dnc-scrub.chart" .root }}
{{ include "dnc-scrub.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: dnc-scrub
{{- end }}

{{/* Labels of objects that belong to the release as a whole (rules, dashboards, monitors). */}}
{{- define "dnc-scrub.releaseLabels" -}}
helm.sh/chart: {{ include "dnc-scrub.chart" . }}
{{ include "dnc-scrub.releaseSelectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: dnc-scrub
{{- end }}

{{- define "dnc-scrub.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "dnc-scrub.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The migration hook runs before the release's own objects exist (pre-install), so it cannot use
the ServiceAccount the chart creates; it uses an existing one or the namespace default.
*/}}
{{- define "dnc-scrub.migrationServiceAccountName" -}}
{{- if .Values.serviceAccount.create }}default{{ else }}{{ default "default" .Values.serviceAccount.name }}{{ end }}
{{- end }}

{{- define "dnc-scrub.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{- define "dnc-scrub.existingSecret" -}}
{{- required "existingSecret is required: the name of a Secret with the keys listed under secretKeys" .Values.existingSecret }}
{{- end }}

{{/* Address of an internal service's data-plane listener (HTTP/2 over mTLS): https://host:port. */}}
{{- define "dnc-scrub.grpcAddr" -}}
{{- printf "https://%s.%s.svc:%d" (include "dnc-scrub.componentName" .) .root.Release.Namespace (int .root.Values.ports.grpc) }}
{{- end }}

{{/* Address of a service's admin listener (operator only; admission reaches quota's for SetLimit). */}}
{{- define "dnc-scrub.adminAddr" -}}
{{- printf "https://%s.%s.svc:%d" (include "dnc-scrub.componentName" .) .root.Release.Namespace (int .root.Values.ports.admin) }}
{{- end }}

{{/* Pod-level security context: non-root, RuntimeDefault seccomp. */}}
{{- define "dnc-scrub.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 1000
runAsGroup: 1000
fsGroup: 1000
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* Container security context: no escalation, read-only root, no capabilities. */}}
{{- define "dnc-scrub.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
privileged: false
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* Env from the existing Secret: list of "ENV_NAME" whose Secret key comes from secretKeys. */}}
{{- define "dnc-scrub.secretEnv" -}}
{{- $secret := include "dnc-scrub.existingSecret" .root }}
{{- range .names }}
- name: {{ . }}
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ get $.root.Values.secretKeys . }}
{{- end }}
{{- end }}

{{/*
Env every role gets: dict "root" $ "stores" (list "DATABASE_URL" ...), the datastore URLs (with their
credentials) of the stores this role uses and no others: the gateway, facing the internet, holds none.
*/}}
{{- define "dnc-scrub.commonEnv" -}}
{{- $v := .root.Values }}
{{- with .stores }}
{{ include "dnc-scrub.secretEnv" (dict "root" $.root "names" .) | trim }}
{{- end }}
{{- if has "NATS_URL" (.stores | default list) }}
- name: DNC_JETSTREAM_REPLICAS
  value: {{ $v.config.jetstreamReplicas | int | quote }}
{{- end }}
- name: DNC_LOG_LEVEL
  value: {{ $v.config.logLevel | quote }}
- name: DNC_SHUTDOWN_TIMEOUT_MS
  value: {{ $v.config.shutdownTimeoutMs | int | quote }}
- name: DNC_METRICS_PORT
  value: {{ $v.ports.metrics | int | quote }}
- name: NODE_OPTIONS
  value: {{ printf "--max-old-space-size=%d" (int $v.config.nodeMaxOldSpaceMb) | quote }}
{{- end }}

{{/* Env of the roles that run jobs: scheduler API and workers. */}}
{{- define "dnc-scrub.jobsEnv" -}}
{{ include "dnc-scrub.secretEnv" (dict "root" . "names" (list "DNC_KEKS")) | trim }}
- name: DNC_KEK_ACTIVE_ID
  value: {{ required "config.kekActiveId is required: the id of the active key-encryption key in DNC_KEKS" .Values.config.kekActiveId | quote }}
- name: DNC_QUOTA_ADDR
  value: {{ include "dnc-scrub.grpcAddr" (dict "root" . "component" "quota") | quote }}
- name: DNC_GRPC_PORT
  value: {{ .Values.ports.grpc | int | quote }}
- name: DNC_JOB_HARD_CAP_SECONDS
  value: {{ .Values.config.jobHardCapSeconds | int | quote }}
- name: DNC_RESULT_TTL_SECONDS
  value: {{ .Values.config.resultTtlSeconds | int | quote }}
- name: DNC_METADATA_TTL_SECONDS
  value: {{ .Values.config.metadataTtlSeconds | int | quote }}
{{- end }}

{{/* Shared pod scheduling fields of a component block: dict "root" $ "values" .Values.gateway. */}}
{{- define "dnc-scrub.podScheduling" -}}
{{- with .values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .root.Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* preStop delay: the endpoint removal propagates before the process starts draining. */}}
{{- define "dnc-scrub.lifecycle" -}}
lifecycle:
  preStop:
    exec:
      command: ["sleep", {{ .Values.lifecycle.preStopSleepSeconds | int | quote }}]
{{- end }}

{{- define "dnc-scrub.tmpVolume" -}}
- name: tmp
  emptyDir:
    sizeLimit: {{ .Values.tmpSizeLimit }}
{{- end }}

{{- define "dnc-scrub.tmpVolumeMount" -}}
- name: tmp
  mountPath: /tmp
{{- end }}
