{{/*
Workload identity of a component: its SPIFFE-style URI (docs/security.md). The identity names are
the component names: gateway, admission, quota, job-scheduler, job-worker, and operator.
*/}}
{{- define "dnc-scrub.spiffeId" -}}
{{- printf "spiffe://%s/%s" .root.Values.tls.trustDomain .identity }}
{{- end }}

{{/* The Secret with tls.crt, tls.key and ca.crt of an identity: dict "root" $ "identity" "admission". */}}
{{- define "dnc-scrub.tlsSecretName" -}}
{{- $existing := get .root.Values.tls.existingSecrets .identity }}
{{- if $existing }}
{{- $existing }}
{{- else if .root.Values.tls.certManager.enabled }}
{{- printf "%s-%s-tls" (include "dnc-scrub.fullname" .root) .identity | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- fail (printf "tls: %s has no certificate: enable tls.certManager or set tls.existingSecrets.%s" .identity .identity) }}
{{- end }}
{{- end }}

{{/* cert-manager Certificate of an identity: dict "root" $ "identity" "admission" "duration" ... */}}
{{- define "dnc-scrub.certificate" -}}
{{- $root := .root }}
{{- $cm := $root.Values.tls.certManager }}
apiVersion: cert-manager.io/v1
kind: Certificate
metadata:
  name: {{ include "dnc-scrub.tlsSecretName" . }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "dnc-scrub.labels" (dict "root" $root "component" .identity) | nindent 4 }}
spec:
  secretName: {{ include "dnc-scrub.tlsSecretName" . }}
  commonName: {{ .identity }}
  uris:
    - {{ include "dnc-scrub.spiffeId" . }}
  {{- with .dnsNames }}
  dnsNames:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  duration: {{ .duration | default $cm.duration }}
  renewBefore: {{ .renewBefore | default $cm.renewBefore }}
  privateKey:
    algorithm: ECDSA
    size: 256
    rotationPolicy: Always
  usages:
    - digital signature
    - server auth
    - client auth
  issuerRef:
    {{- toYaml $cm.issuerRef | nindent 4 }}
{{- end }}

{{/* Env of a process's identity and certificate: dict "root" $ "identity" "admission". */}}
{{- define "dnc-scrub.tlsEnv" -}}
- name: DNC_TLS_DIR
  value: /var/run/dnc/tls
- name: DNC_TRUST_DOMAIN
  value: {{ .root.Values.tls.trustDomain | quote }}
- name: DNC_TLS_RELOAD_MS
  value: {{ .root.Values.tls.reloadMs | int | quote }}
{{- end }}

{{/*
The certificate Secret, mounted as a directory (never with subPath: the kubelet then swaps rotated
files in place and the process re-reads them every tls.reloadMs, with no restart).
*/}}
{{- define "dnc-scrub.tlsVolume" -}}
- name: tls
  secret:
    secretName: {{ include "dnc-scrub.tlsSecretName" . }}
    defaultMode: 0440
{{- end }}

{{- define "dnc-scrub.tlsVolumeMount" -}}
- name: tls
  mountPath: /var/run/dnc/tls
  readOnly: true
{{- end }}

{{/* This component's own NATS user: dict "root" $ "user" "admission". Nothing for components without NATS. */}}
{{- define "dnc-scrub.natsEnv" -}}
{{- $key := get .root.Values.nats.passwordKeys .user }}
{{- if $key }}
- name: DNC_NATS_USER
  value: {{ .user | quote }}
- name: DNC_NATS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "dnc-scrub.existingSecret" .root }}
      key: {{ $key }}
{{- end }}
{{- end }}
