{{/*
Termination budget: the preStop delay, then the service drains within DNC_SHUTDOWN_TIMEOUT_MS,
and the kubelet must not kill it before both are over.
*/}}
{{- define "dnc-scrub.terminationGracePeriodSeconds" -}}
{{- $drain := div (int .Values.config.shutdownTimeoutMs) 1000 }}
{{- $needed := add (int .Values.lifecycle.preStopSleepSeconds) $drain 5 }}
{{- $grace := int .Values.lifecycle.terminationGracePeriodSeconds }}
{{- if lt $grace (int $needed) }}
{{- fail (printf "lifecycle.terminationGracePeriodSeconds (%d) must be at least preStopSleepSeconds + shutdownTimeoutMs/1000 + 5 = %d" $grace (int $needed)) }}
{{- end }}
{{- $grace }}
{{- end }}

{{/*
Probes of an internal Connect service: grpc.health.v1 on the plaintext health port, which answers
health and nothing else (the kubelet presents no client certificate; the gRPC port requires one).
Startup asks only whether that listener is up: its gRPC status includes dependencies it checks while
serving (NOT_SERVING while quota, Postgres or NATS is down), and a pod that got as far as listening
during such an outage was killed into CrashLoopBackOff, down for minutes after the outage ended. (A
process that cannot connect to Postgres or NATS at start still exits and restarts, by design.)
*/}}
{{- define "dnc-scrub.grpcProbes" -}}
{{- $p := .Values.probes }}
startupProbe:
  tcpSocket:
    port: {{ .Values.ports.health }}
  periodSeconds: {{ $p.startup.periodSeconds }}
  failureThreshold: {{ $p.startup.failureThreshold }}
  timeoutSeconds: {{ $p.timeoutSeconds }}
readinessProbe:
  grpc:
    port: {{ .Values.ports.health }}
  periodSeconds: {{ $p.readiness.periodSeconds }}
  failureThreshold: {{ $p.readiness.failureThreshold }}
  timeoutSeconds: {{ $p.timeoutSeconds }}
{{- /*
The gRPC health status includes dependencies (NOT_SERVING while Postgres, Redis or NATS is down),
so liveness only asks whether the server accepts connections: an outage must take pods out of
rotation, not restart all of them at once.
*/}}
livenessProbe:
  tcpSocket:
    port: grpc
  periodSeconds: {{ $p.liveness.periodSeconds }}
  failureThreshold: {{ $p.liveness.failureThreshold }}
  timeoutSeconds: {{ $p.timeoutSeconds }}
{{- end }}

{{/*
One Deployment of the platform: dict "root" $ "component" "admission" "role" "admission"
"values" .Values.admission "env" (yaml list string) "grpc" true|false "http" true|false
"admin" true|false. The component name is the process's workload identity.
*/}}
{{- define "dnc-scrub.deployment" -}}
{{- $root := .root }}
{{- $v := .values }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "dnc-scrub.componentName" . }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "dnc-scrub.labels" . | nindent 4 }}
spec:
  {{- if not .autoscaled }}
  replicas: {{ $v.replicaCount }}
  {{- end }}
  revisionHistoryLimit: 5
  selector:
    matchLabels:
      {{- include "dnc-scrub.selectorLabels" . | nindent 6 }}
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxSurge: 25%
      maxUnavailable: 0
  template:
    metadata:
      labels:
        {{- include "dnc-scrub.labels" . | nindent 8 }}
      annotations:
        {{- with $v.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
        dnc-scrub/config-checksum: {{ toJson $root.Values.config | sha256sum | trunc 16 | quote }}
    spec:
      serviceAccountName: {{ include "dnc-scrub.serviceAccountName" $root }}
      automountServiceAccountToken: false
      enableServiceLinks: false
      terminationGracePeriodSeconds: {{ include "dnc-scrub.terminationGracePeriodSeconds" $root }}
      securityContext:
        {{- include "dnc-scrub.podSecurityContext" $root | nindent 8 }}
      {{- with (include "dnc-scrub.podScheduling" (dict "root" $root "values" $v) | trim) }}
      {{- . | nindent 6 }}
      {{- end }}
      containers:
        - name: {{ .component }}
          image: {{ include "dnc-scrub.image" $root }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          args: [{{ .role | quote }}]
          ports:
            {{- if .http }}
            - name: http
              containerPort: {{ $root.Values.ports.http }}
              protocol: TCP
            {{- end }}
            {{- if .grpc }}
            - name: grpc
              containerPort: {{ $root.Values.ports.grpc }}
              protocol: TCP
            - name: health
              containerPort: {{ $root.Values.ports.health }}
              protocol: TCP
            {{- end }}
            {{- if .admin }}
            - name: admin
              containerPort: {{ $root.Values.ports.admin }}
              protocol: TCP
            {{- end }}
            - name: metrics
              containerPort: {{ $root.Values.ports.metrics }}
              protocol: TCP
          env:
            {{- include "dnc-scrub.commonEnv" (dict "root" $root "stores" .stores) | nindent 12 }}
            {{- include "dnc-scrub.tlsEnv" (dict "root" $root) | nindent 12 }}
            {{- include "dnc-scrub.natsEnv" (dict "root" $root "user" .component) | nindent 12 }}
            {{- if .grpc }}
            - name: DNC_HEALTH_PORT
              value: {{ $root.Values.ports.health | int | quote }}
            {{- end }}
            {{- if .admin }}
            - name: DNC_ADMIN_PORT
              value: {{ $root.Values.ports.admin | int | quote }}
            {{- end }}
            {{- with .env }}
            {{- . | nindent 12 }}
            {{- end }}
            {{- with $v.extraEnv }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          {{- if .http }}
          startupProbe:
            httpGet:
              path: /v1/health
              port: http
            periodSeconds: {{ $root.Values.probes.startup.periodSeconds }}
            failureThreshold: {{ $root.Values.probes.startup.failureThreshold }}
            timeoutSeconds: {{ $root.Values.probes.timeoutSeconds }}
          readinessProbe:
            httpGet:
              path: /v1/ready
              port: http
            periodSeconds: {{ $root.Values.probes.readiness.periodSeconds }}
            failureThreshold: {{ $root.Values.probes.readiness.failureThreshold }}
            timeoutSeconds: {{ $root.Values.probes.timeoutSeconds }}
          livenessProbe:
            httpGet:
              path: /v1/health
              port: http
            periodSeconds: {{ $root.Values.probes.liveness.periodSeconds }}
            failureThreshold: {{ $root.Values.probes.liveness.failureThreshold }}
            timeoutSeconds: {{ $root.Values.probes.timeoutSeconds }}
          {{- else }}
          {{- include "dnc-scrub.grpcProbes" $root | trim | nindent 10 }}
          {{- end }}
          {{- include "dnc-scrub.lifecycle" $root | nindent 10 }}
          resources:
            {{- toYaml $v.resources | nindent 12 }}
          securityContext:
            {{- include "dnc-scrub.containerSecurityContext" $root | nindent 12 }}
          volumeMounts:
            {{- include "dnc-scrub.tmpVolumeMount" $root | nindent 12 }}
            {{- include "dnc-scrub.tlsVolumeMount" $root | nindent 12 }}
      volumes:
        {{- include "dnc-scrub.tmpVolume" $root | nindent 8 }}
        {{- include "dnc-scrub.tlsVolume" (dict "root" $root "identity" .component) | nindent 8 }}
{{- end }}

{{/* ClusterIP Service of a component: dict "root" $ "component" "admission" "grpc" true "http" false "admin" true. */}}
{{- define "dnc-scrub.service" -}}
{{- $root := .root }}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "dnc-scrub.componentName" . }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "dnc-scrub.labels" . | nindent 4 }}
spec:
  type: ClusterIP
  selector:
    {{- include "dnc-scrub.selectorLabels" . | nindent 4 }}
  ports:
    {{- if .http }}
    - name: http
      port: {{ .port | default $root.Values.ports.http }}
      targetPort: http
      protocol: TCP
    {{- end }}
    {{- if .grpc }}
    # HTTP/2 over mutual TLS: callers present a platform certificate.
    - name: grpc
      port: {{ $root.Values.ports.grpc }}
      targetPort: grpc
      protocol: TCP
    {{- end }}
    {{- if .admin }}
    # Administrative RPCs and the audit log: the operator identity only.
    - name: admin
      port: {{ $root.Values.ports.admin }}
      targetPort: admin
      protocol: TCP
    {{- end }}
    - name: metrics
      port: {{ $root.Values.ports.metrics }}
      targetPort: metrics
      protocol: TCP
{{- end }}

{{/* PodDisruptionBudget of a component: dict "root" $ "component" "quota" "values" .Values.quota. */}}
{{- define "dnc-scrub.pdb" -}}
{{- if .values.pdb.enabled }}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "dnc-scrub.componentName" . }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "dnc-scrub.labels" . | nindent 4 }}
spec:
  {{- if hasKey .values.pdb "minAvailable" }}
  minAvailable: {{ .values.pdb.minAvailable }}
  {{- else }}
  maxUnavailable: {{ .values.pdb.maxUnavailable | default 1 }}
  {{- end }}
  unhealthyPodEvictionPolicy: AlwaysAllow
  selector:
    matchLabels:
      {{- include "dnc-scrub.selectorLabels" . | nindent 6 }}
{{- end }}
{{- end }}

{{/* CPU-based HPA: dict "root" $ "component" "gateway" "values" .Values.gateway.autoscaling. */}}
{{- define "dnc-scrub.hpa" -}}
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ include "dnc-scrub.componentName" . }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "dnc-scrub.labels" . | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ include "dnc-scrub.componentName" . }}
  minReplicas: {{ .values.minReplicas }}
  maxReplicas: {{ .values.maxReplicas }}
  metrics:
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ .values.targetCPUUtilizationPercentage }}
  behavior:
    scaleDown:
      stabilizationWindowSeconds: 300
{{- end }}
