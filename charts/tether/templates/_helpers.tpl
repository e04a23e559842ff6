{{/* Names --------------------------------------------------------------------------- */}}

{{- define "tether.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release-derived prefix of every object name (max 63 chars, DNS-1123). */}}
{{- define "tether.fullname" -}}
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

{{/* "<fullname>-<component>", e.g. tether-api; call with (dict "root" $ "component" "api"). */}}
{{- define "tether.componentName" -}}
{{- printf "%s-%s" (include "tether.fullname" .root | trunc 50 | trimSuffix "-") .component }}
{{- end }}

{{- define "tether.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "tether.settingsConfigMapName" -}}
{{- printf "%s-settings" (include "tether.fullname" .) }}
{{- end }}

{{- define "tether.policiesConfigMapName" -}}
{{- printf "%s-policies" (include "tether.fullname" .) }}
{{- end }}

{{- define "tether.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "tether.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Labels ---------------------------------------------------------------------------- */}}

{{- define "tether.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tether.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "tether.labels" -}}
helm.sh/chart: {{ include "tether.chart" . }}
{{ include "tether.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: tether
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Call with (dict "root" $ "component" "api"). */}}
{{- define "tether.componentSelectorLabels" -}}
{{ include "tether.selectorLabels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "tether.componentLabels" -}}
{{ include "tether.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* Image ----------------------------------------------------------------------------- */}}

{{- define "tether.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* Settings -------------------------------------------------------------------------- */}}

{{/*
Every non-secret setting as a YAML map: the settings ConfigMap's data, and the migration
Job's inline env (the hook runs before the ConfigMap exists).
*/}}
{{- define "tether.settings" -}}
{{- $forbidden := list "TETHER_DATABASE_URL" "TETHER_DB__OWNER_URL" "TETHER_REDIS_URL" "TETHER_HOT_REDIS_URL" "TETHER_FILES__ACCESS_KEY_ID" "TETHER_FILES__SECRET_ACCESS_KEY" }}
{{- range .Values.secrets.providers }}
{{- $forbidden = append $forbidden .env }}
{{- end }}
{{- $s := dict
  "TETHER_REGION" (required "region is required" .Values.region | toString)
  "TETHER_LOG_LEVEL" (.Values.config.logLevel | toString)
  "TETHER_HOST" "0.0.0.0"
  "TETHER_PORT" (.Values.config.port | toString)
  "TETHER_API__OPS_PORT" (.Values.config.opsPort | toString)
  "TETHER_DATA_DIR" (.Values.config.dataDir | toString)
  "TETHER_DB__ROLE" (.Values.config.dbRole | toString)
  "TETHER_KNOWLEDGE__MAX_UPLOAD_BYTES" (mul .Values.config.maxUploadMegabytes 1048576 | toString)
  "TETHER_CONSOLE__ENABLED" (.Values.config.console.enabled | toString)
  "TETHER_CONSOLE__SECURE_COOKIES" (.Values.config.console.secureCookies | toString)
  "TETHER_CONSOLE__SESSION_IDLE_MINUTES" (.Values.config.console.sessionIdleMinutes | toString)
  "TETHER_CONSOLE__SESSION_MAX_HOURS" (.Values.config.console.sessionMaxHours | toString)
  "OTEL_EXPORTER_OTLP_PROTOCOL" (.Values.otel.protocol | toString)
  "OTEL_TRACES_SAMPLER" (.Values.otel.tracesSampler | toString)
  "OTEL_TRACES_SAMPLER_ARG" (.Values.otel.tracesSamplerArg | toString)
}}
{{- if .Values.otel.enabled }}
{{- $_ := set $s "OTEL_EXPORTER_OTLP_ENDPOINT" (required "otel.endpoint is required when otel.enabled is true" .Values.otel.endpoint) }}
{{- else }}
{{- /* No OTLP export; not OTEL_SDK_DISABLED, which would also empty the API's /metrics
       (the ServiceMonitor's and the queue-depth autoscaler's source). */}}
{{- $_ := set $s "OTEL_TRACES_EXPORTER" "none" }}
{{- $_ := set $s "OTEL_METRICS_EXPORTER" "none" }}
{{- end }}
{{- with .Values.files }}
{{- if eq (.backend | toString) "s3" }}
{{- /* Uploaded files in the region's object store (decision 0083). */}}
{{- $_ := set $s "TETHER_FILES__BACKEND" "s3" }}
{{- $_ := set $s "TETHER_FILES__BUCKET" (required "files.bucket is required when files.backend is s3" .bucket | toString) }}
{{- if .endpoint }}{{- $_ := set $s "TETHER_FILES__ENDPOINT_URL" (.endpoint | toString) }}{{- end }}
{{- if .region }}{{- $_ := set $s "TETHER_FILES__REGION" (.region | toString) }}{{- end }}
{{- if .keyPrefix }}{{- $_ := set $s "TETHER_FILES__KEY_PREFIX" (.keyPrefix | toString) }}{{- end }}
{{- end }}
{{- end }}
{{- $attrs := list (printf "cloud.region=%s" .Values.region) }}
{{- range $k, $v := .Values.otel.resourceAttributes }}
{{- $attrs = append $attrs (printf "%s=%v" $k $v) }}
{{- end }}
{{- $_ := set $s "OTEL_RESOURCE_ATTRIBUTES" (join "," $attrs) }}
{{- range $k, $v := .Values.config.extraEnv }}
{{- if has $k $forbidden }}
{{- fail (printf "config.extraEnv.%s would put a secret into a ConfigMap: reference a Secret under secrets instead" $k) }}
{{- end }}
{{- $_ := set $s $k ($v | toString) }}
{{- end }}
{{- toYaml $s }}
{{- end }}

{{/* Secrets, by reference only. Call with (dict "root" $ "providers" true|false). */}}
{{- define "tether.secretEnv" -}}
{{- $secrets := .root.Values.secrets -}}
- name: TETHER_DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ required "secrets.database.existingSecret is required" $secrets.database.existingSecret | quote }}
      key: {{ required "secrets.database.key is required" $secrets.database.key | quote }}
- name: TETHER_REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ required "secrets.redis.existingSecret is required" $secrets.redis.existingSecret | quote }}
      key: {{ required "secrets.redis.key is required" $secrets.redis.key | quote }}
{{- with $secrets.hotRedis }}
{{- if .existingSecret }}
{{- /* Every pod gets it alike: a worker invalidating in another Redis than the API reads would leave stale partitions. */}}
- name: TETHER_HOT_REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ .existingSecret | quote }}
      key: {{ required "secrets.hotRedis.key is required" .key | quote }}
{{- end }}
{{- end }}
{{- /* Every pod must derive the same audit keys: a pod left to make its own would write
  links no other pod verifies, so there is no default here. */}}
- name: TETHER_AUDIT__SECRET
  valueFrom:
    secretKeyRef:
      name: {{ required "secrets.auditSecret.existingSecret is required (the audit chain's key, the same for every pod)" $secrets.auditSecret.existingSecret | quote }}
      key: {{ required "secrets.auditSecret.key is required" $secrets.auditSecret.key | quote }}
{{- if .providers }}
{{- range $secrets.providers }}
- name: {{ required "secrets.providers[].env is required" .env | quote }}
  valueFrom:
    secretKeyRef:
      name: {{ required "secrets.providers[].existingSecret is required" .existingSecret | quote }}
      key: {{ required "secrets.providers[].key is required" .key | quote }}
      optional: {{ .optional | default false }}
{{- end }}
{{- /* The API writes files, the workers read and delete them; beat and the migration
  Job never touch the store. */}}
{{- include "tether.objectStoreEnv" $.root }}
{{- end }}
{{- end }}

{{/* The object store's key (files.backend s3) for the pods that touch the store: the API,
the workers and the backup CronJob (it copies the files, decision 0096). Without a
Secret: the pod's own identity (IRSA, a role). */}}
{{- define "tether.objectStoreEnv" -}}
{{- with .Values.secrets.objectStore }}
{{- if and .existingSecret (eq ($.Values.files.backend | toString) "s3") }}
- name: TETHER_FILES__ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ .existingSecret | quote }}
      key: {{ required "secrets.objectStore.accessKeyIdKey is required" .accessKeyIdKey | quote }}
- name: TETHER_FILES__SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .existingSecret | quote }}
      key: {{ required "secrets.objectStore.secretAccessKeyKey is required" .secretAccessKeyKey | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* Pods ------------------------------------------------------------------------------ */}}

{{/* checksum/config: pods roll when a ConfigMap they read changes. */}}
{{- define "tether.configChecksum" -}}
{{- $settings := include (print .Template.BasePath "/configmap-settings.yaml") . }}
{{- $policies := include (print .Template.BasePath "/configmap-policies.yaml") . }}
{{- print $settings $policies | sha256sum }}
{{- end }}

{{/* Pod template annotations. Call with (dict "root" $). */}}
{{- define "tether.podAnnotations" -}}
checksum/config: {{ include "tether.configChecksum" .root }}
{{- with .root.Values.podAnnotations }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Pod-spec fields of the API, worker and beat: the chart's ServiceAccount plus the rest. */}}
{{- define "tether.podCommon" -}}
serviceAccountName: {{ include "tether.serviceAccountName" . }}
automountServiceAccountToken: {{ .Values.serviceAccount.automountToken }}
{{ include "tether.podScheduling" . }}
{{- end }}

{{/* Pod-spec fields every pod shares, hook Job included: pull secrets, pod security, placement. */}}
{{- define "tether.podScheduling" -}}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* One constraint per topology key, selecting this component's pods. Call with (dict "root" $ "component" "api"). */}}
{{- define "tether.topologySpread" -}}
{{- $spread := .root.Values.topologySpread -}}
{{- if $spread.enabled -}}
topologySpreadConstraints:
{{- range $spread.topologyKeys }}
  - maxSkew: {{ $spread.maxSkew }}
    topologyKey: {{ . }}
    whenUnsatisfiable: {{ $spread.whenUnsatisfiable }}
    labelSelector:
      matchLabels:
        {{- include "tether.componentSelectorLabels" (dict "root" $.root "component" $.component) | nindent 8 }}
{{- end }}
{{- end }}
{{- end }}

{{/* The writable /tmp and, for app pods, the casbin policies. Call with (dict "root" $ "policies" true|false). */}}
{{- define "tether.volumes" -}}
- name: tmp
  emptyDir:
    sizeLimit: {{ .root.Values.tmpVolume.sizeLimit }}
{{- if .policies }}
- name: policies
  configMap:
    name: {{ include "tether.policiesConfigMapName" .root }}
{{- end }}
{{- end }}

{{- define "tether.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
{{- if .policies }}
- name: policies
  mountPath: /app/policies
  readOnly: true
{{- end }}
{{- end }}

{{/* Container fields shared by every workload. */}}
{{- define "tether.containerCommon" -}}
image: {{ include "tether.image" . }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
securityContext:
  {{- toYaml .Values.securityContext | nindent 2 }}
{{- end }}
