{{/* The chart's name, and the full name objects are named after (Cilium-style overrides). */}}
{{- define "strait.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "strait.fullname" -}}
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

{{/* Labels on every object. */}}
{{- define "strait.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "strait.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: strait
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* What a component's Pods are selected by: (dict "root" $ "component" "agent"). */}}
{{- define "strait.selectorLabels" -}}
app.kubernetes.io/name: {{ include "strait.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* A component's objects: its name, `<fullname>-<component>`. */}}
{{- define "strait.componentName" -}}
{{- printf "%s-%s" (include "strait.fullname" .root) .component | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* A component's ServiceAccount name. */}}
{{- define "strait.serviceAccountName" -}}
{{- $account := index .root.Values.serviceAccounts .component }}
{{- default (include "strait.componentName" .) $account.name }}
{{- end }}

{{/* The image reference: repository:tag, or repository@digest. */}}
{{- define "strait.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* The ConfigMap both binaries read their settings from (configmap.yaml). */}}
{{- define "strait.configName" -}}
{{- printf "%s-config" (include "strait.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Where the agent keeps the kernel probe's report (--probe-cache): a memory emptyDir, which lives as long as
the pod. A restarted container (a crash, a failed liveness probe) starts without probing again; a new pod
(an upgrade: another build, so another cache key anyway) probes once.
*/}}
{{- define "strait.probeCacheDir" -}}/var/cache/strait{{- end }}

{{/* Where the ConfigMap is mounted in both containers. */}}
{{- define "strait.configDir" -}}/etc/strait{{- end }}

{{/* The peers' cluster ids (a peer is a string or {clusterId, encryption}). */}}
{{- define "strait.peerIds" -}}
{{- range .Values.peers }}{{ if kindIs "string" . }}{{ . }}{{ else }}{{ .clusterId }}{{ end }} {{ end }}
{{- end }}

{{/* The probe settings of a component: (dict "values" .Values.agent.livenessProbe "path" "/healthz" "port" 9972). */}}
{{- define "strait.probe" -}}
httpGet:
  path: {{ .path }}
  port: {{ .port }}
{{- toYaml .values | nindent 0 }}
{{- end }}

{{/*
Fails unless a Prometheus Operator kind can be created: the cluster serves it (`helm template` is told
with --api-versions), or the values trust it: (dict "root" $ "kind" "ServiceMonitor" "value" "metrics.serviceMonitor").
*/}}
{{- define "strait.requireMonitoringApi" -}}
{{- $values := index .root.Values.metrics (.value | trimPrefix "metrics.") }}
{{- if not (or $values.trustCRDsExist (.root.Capabilities.APIVersions.Has (printf "monitoring.coreos.com/v1/%s" .kind))) }}
{{- fail (printf "%s.enabled: the cluster does not serve monitoring.coreos.com/v1 %s: install the Prometheus Operator's CRDs, or set %s.trustCRDsExist=true" .value .kind .value) }}
{{- end }}
{{- end }}
