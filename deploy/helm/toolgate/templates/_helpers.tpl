{{/*
toolgate's named templates. Each takes the chart's context: `.` in this chart, and `.Subcharts.toolgate` in the
chart of an agent that lists this one as a dependency (README.md, "As a sidecar"), which gives them this chart's
values, defaults included.
*/}}

{{- define "toolgate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "toolgate.fullname" -}}
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

{{- define "toolgate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "toolgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "toolgate.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "toolgate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The mode, checked: every template goes through it, so a wrong one fails the whole release. */}}
{{- define "toolgate.mode" -}}
{{- if not (has .Values.mode (list "shared" "sidecar")) }}
{{- fail (printf "mode is %q: it must be shared (a Deployment and Service of its own) or sidecar (in your agent's pod, README.md)" (toString .Values.mode)) }}
{{- end }}
{{- .Values.mode }}
{{- end }}

{{- define "toolgate.secretName" -}}
{{- required "secret.name is required: the Secret holding the tokens" .Values.secret.name }}
{{- end }}

{{/* The host an agent reaches the gateway at: the Service's name, or loopback beside it in the pod. */}}
{{- define "toolgate.host" -}}
{{- if eq (include "toolgate.mode" .) "shared" }}
{{- printf "%s.%s.svc" (include "toolgate.fullname" .) .Release.Namespace }}
{{- else }}
{{- "127.0.0.1" }}
{{- end }}
{{- end }}

{{/* Where the MCP front door listens: all interfaces behind the Service, loopback in a sidecar. */}}
{{- define "toolgate.mcpListen" -}}
{{- if eq (include "toolgate.mode" .) "shared" }}0.0.0.0{{ else }}127.0.0.1{{ end }}:{{ .Values.mcp.port }}
{{- end }}

{{/* Where the console listens: loopback, which kubectl port-forward reaches, unless exposed in shared mode. */}}
{{- define "toolgate.consoleListen" -}}
{{- if and .Values.console.expose (eq (include "toolgate.mode" .) "shared") }}0.0.0.0{{ else }}127.0.0.1{{ end }}:{{ .Values.console.port }}
{{- end }}

{{/* The Host values the MCP front door accepts: loopback names, the Service's names in shared mode, and more. */}}
{{- define "toolgate.mcpHosts" -}}
{{- $hosts := list "localhost" "127.0.0.1" "[::1]" }}
{{- if eq (include "toolgate.mode" .) "shared" }}
{{- $svc := include "toolgate.fullname" . }}
{{- $ns := .Release.Namespace }}
{{- $hosts = concat $hosts (list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.%s" $svc $ns .Values.clusterDomain)) }}
{{- end }}
{{- concat $hosts .Values.mcp.allowedHosts | toJson }}
{{- end }}

{{/* toolgate.toml. Strings are written as JSON, which TOML reads as the same basic strings. */}}
{{- define "toolgate.config" -}}
{{- $mode := include "toolgate.mode" . -}}
listen = "0.0.0.0:{{ .Values.grpc.port }}"   # the kubelet's gRPC probes reach the pod's IP
data_dir = "/var/lib/toolgate"          # the volume toolgate-data
{{- if or .Values.metrics.enabled .Values.otlpEndpoint }}

[telemetry]
{{- if .Values.metrics.enabled }}
prometheus_listen = "0.0.0.0:{{ .Values.metrics.port }}"   # GET /metrics, with the admin token as bearer
{{- end }}
{{- with .Values.otlpEndpoint }}
otlp_endpoint = {{ toJson . }}
{{- end }}
{{- end }}
{{- if .Values.mcp.enabled }}

[mcp_front]
listen = "{{ include "toolgate.mcpListen" . }}"
allowed_hosts = {{ include "toolgate.mcpHosts" . }}

[[mcp_front.tokens]]
token_env = "TOOLGATE_MCP_TOKEN"        # the Secret's mcp-token
user_id = {{ required "mcp.userId is required: the user the MCP token's calls run as" .Values.mcp.userId | toJson }}
tenant = {{ .Values.mcp.tenant | toJson }}
{{- end }}
{{- if .Values.console.enabled }}

[console]
listen = "{{ include "toolgate.consoleListen" . }}"   # the review token logs in
{{- with .Values.console.allowedHosts }}
allowed_hosts = {{ concat (list "localhost" "127.0.0.1" "[::1]") . | toJson }}
{{- end }}
{{- end }}
{{- with .Values.config.extra }}

{{ . }}
{{- end }}
{{- end }}

{{/* A Secret's key as a container variable. */}}
{{- define "toolgate.secretEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ .secret }}
      key: {{ .key }}
{{- end }}

{{/* The gateway's container, without the leading "- ": in shared mode, the Deployment's. */}}
{{- define "toolgate.container" -}}
{{- $secret := include "toolgate.secretName" . -}}
name: toolgate
image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
imagePullPolicy: {{ .Values.image.pullPolicy }}
args: ["--config", "/etc/toolgate/toolgate.toml"]
env:
  - name: TOOLGATE_LISTEN   # the image sets 0.0.0.0:50051, and the environment wins over the file
    value: "0.0.0.0:{{ .Values.grpc.port }}"
  {{- include "toolgate.secretEnv" (dict "name" "TOOLGATE_ADMIN_TOKEN" "secret" $secret "key" "admin-token") | nindent 2 }}
  {{- include "toolgate.secretEnv" (dict "name" "TOOLGATE_DATA_TOKEN" "secret" $secret "key" "data-token") | nindent 2 }}
  {{- include "toolgate.secretEnv" (dict "name" "TOOLGATE_REVIEW_TOKEN" "secret" $secret "key" "review-token") | nindent 2 }}
  {{- if .Values.mcp.enabled }}
  {{- include "toolgate.secretEnv" (dict "name" "TOOLGATE_MCP_TOKEN" "secret" $secret "key" "mcp-token") | nindent 2 }}
  {{- end }}
  - name: RUST_LOG
    value: {{ .Values.logLevel | quote }}
  {{- with .Values.extraEnv }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
ports:
  - name: grpc
    containerPort: {{ .Values.grpc.port }}
  {{- if .Values.metrics.enabled }}
  - name: metrics
    containerPort: {{ .Values.metrics.port }}
  {{- end }}
  {{- if .Values.mcp.enabled }}
  - name: mcp
    containerPort: {{ .Values.mcp.port }}
  {{- end }}
  {{- if .Values.console.enabled }}
  - name: console
    containerPort: {{ .Values.console.port }}
  {{- end }}
# Native gRPC probes: grpc.health.v1.Health/Check with service "".
startupProbe:
  grpc: {port: {{ .Values.grpc.port }}}
  periodSeconds: 1
  failureThreshold: 30
readinessProbe:
  grpc: {port: {{ .Values.grpc.port }}}
  periodSeconds: 5
livenessProbe:
  grpc: {port: {{ .Values.grpc.port }}}
  periodSeconds: 10
  failureThreshold: 3
resources:
  {{- toYaml .Values.resources | nindent 2 }}
securityContext:
  runAsNonRoot: true
  runAsUser: 10001
  runAsGroup: 10001
  readOnlyRootFilesystem: true
  allowPrivilegeEscalation: false
  capabilities:
    drop: [ALL]
  seccompProfile:
    type: RuntimeDefault
volumeMounts:
  - name: toolgate-config
    mountPath: /etc/toolgate
    readOnly: true
  - name: toolgate-data
    mountPath: /var/lib/toolgate
{{- end }}

{{/*
The gateway as a native sidecar, one item of the agent pod's initContainers: it serves before the agent starts and
outlives it at shutdown.
*/}}
{{- define "toolgate.sidecar" -}}
- {{ include "toolgate.container" . | nindent 2 | trim }}
  restartPolicy: Always
{{- end }}

{{/* The pod's volumes the gateway mounts, items of its volumes. */}}
{{- define "toolgate.volumes" -}}
- name: toolgate-config
  configMap:
    name: {{ include "toolgate.fullname" . }}
- name: toolgate-data
  emptyDir:
    sizeLimit: {{ .Values.dataSizeLimit }}
{{- end }}

{{/* What an agent needs to call the gateway, items of its container's env. */}}
{{- define "toolgate.agentEnv" -}}
{{- $secret := include "toolgate.secretName" . -}}
{{- $host := include "toolgate.host" . -}}
- name: TOOLGATE_SERVER   # gRPC, with the data token (TOOLGATE_TOKEN) on ToolGateway calls
  value: "{{ $host }}:{{ .Values.grpc.port }}"
{{ include "toolgate.secretEnv" (dict "name" "TOOLGATE_TOKEN" "secret" $secret "key" "data-token") }}
{{ include "toolgate.secretEnv" (dict "name" "TOOLGATE_REVIEW_TOKEN" "secret" $secret "key" "review-token") }}
{{- if .Values.mcp.enabled }}
- name: TOOLGATE_MCP_URL  # an MCP host's server URL, with TOOLGATE_MCP_TOKEN as bearer
  value: "http://{{ $host }}:{{ .Values.mcp.port }}/mcp"
{{ include "toolgate.secretEnv" (dict "name" "TOOLGATE_MCP_TOKEN" "secret" $secret "key" "mcp-token") }}
{{- end }}
{{- end }}
