{{/* Names and labels. */}}
{{- define "kproxy.fullname" -}}
{{- if eq .Values.mode "sidecar" -}}
{{- printf "%s-kproxy" .Values.sidecar.app.name | trunc 63 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "kproxy.selectorLabels" -}}
app.kubernetes.io/name: {{ if eq .Values.mode "sidecar" }}{{ .Values.sidecar.app.name }}{{ else }}{{ .Chart.Name }}{{ end }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: {{ .Values.mode }}
{{- end -}}

{{- define "kproxy.labels" -}}
{{ include "kproxy.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "kproxy.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/*
kproxy.yaml: the values' `config` with what the mode implies. A gateway listens on every
interface and must tell clients a name they reach (listeners.advertised_host, or SNI
names); a sidecar serves its own pod on loopback (kproxy's defaults).
*/}}
{{- define "kproxy.config" -}}
{{- $config := deepCopy .Values.config -}}
{{- $listeners := default (dict) $config.listeners -}}
{{- if eq .Values.mode "gateway" -}}
{{- if not (hasKey $listeners "bind_host") -}}
{{- $_ := set $listeners "bind_host" "0.0.0.0" -}}
{{- end -}}
{{- if and (not $listeners.sni) (not $listeners.advertised_host) -}}
{{- fail "mode gateway: set config.listeners.advertised_host, the name clients reach the load balancer by" -}}
{{- end -}}
{{- if and (hasKey $listeners "broker_port_base") (eq (int $listeners.broker_port_base) 0) -}}
{{- fail "mode gateway: config.listeners.broker_port_base must not be 0 (replicas must agree on node ports)" -}}
{{- end -}}
{{- end -}}
{{- $_ := set $config "listeners" $listeners -}}
{{- toYaml $config -}}
{{- end -}}

{{/*
The ports kproxy listens on, as a YAML list of {name, port}: the bootstrap, then node N
on broker_port_base + N for N = 0..max_node_id and each node_port_overrides entry; with
SNI routing the bootstrap port serves every node. Then each KRaft controller's port
(quorum.controllers, named ctrl-ID). Defaults are kproxy's own.
*/}}
{{- define "kproxy.ports" -}}
{{- $listeners := default (dict) .Values.config.listeners -}}
{{- $bootstrap := 9092 -}}
{{- if hasKey $listeners "bootstrap_port" }}{{ $bootstrap = int $listeners.bootstrap_port }}{{ end -}}
- {name: bootstrap, port: {{ $bootstrap }}}
{{- if not $listeners.sni }}
{{- $base := 9100 -}}
{{- if hasKey $listeners "broker_port_base" }}{{ $base = int $listeners.broker_port_base }}{{ end -}}
{{- $maxNode := 1000 -}}
{{- if hasKey $listeners "max_node_id" }}{{ $maxNode = int $listeners.max_node_id }}{{ end -}}
{{- $overrides := default (dict) $listeners.node_port_overrides -}}
{{- range $id := until (add1 $maxNode | int) }}
{{- if not (hasKey $overrides (toString $id)) }}
- {name: node-{{ $id }}, port: {{ add $base $id }}}
{{- end }}
{{- end }}
{{- range $id, $port := $overrides }}
- {name: node-{{ $id }}, port: {{ int $port }}}
{{- end }}
{{- end }}
{{- $quorum := default (dict) .Values.config.quorum -}}
{{- range $id, $controller := default (dict) $quorum.controllers }}
- {name: ctrl-{{ $id }}, port: {{ int $controller.port }}}
{{- end }}
{{- end -}}

{{/* kproxy's container: the same in both modes but for where it runs. */}}
{{- define "kproxy.container" -}}
name: kproxy
image: {{ include "kproxy.image" . }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
args: ["run", "--config", "/etc/kproxy/kproxy.yaml"]
{{- if eq .Values.mode "sidecar" }}
# A native sidecar: started before the application, stopped after it (Kubernetes 1.29+).
restartPolicy: Always
{{- end }}
ports:
{{- if eq .Values.mode "gateway" }}
{{- range (include "kproxy.ports" . | fromYamlArray) }}
  - {name: {{ .name }}, containerPort: {{ .port }}}
{{- end }}
{{- end }}
  - {name: {{ include "kproxy.adminPortName" . }}, containerPort: {{ .Values.config.admin.port }}}
# Started once the listeners are bound and the cluster answered: in sidecar mode the
# application starts only then. A cluster out of reach for 2 minutes restarts kproxy.
startupProbe:
  httpGet: {path: /readyz, port: {{ include "kproxy.adminPortName" . }}}
  periodSeconds: 2
  failureThreshold: 60
readinessProbe:
  httpGet: {path: /readyz, port: {{ include "kproxy.adminPortName" . }}}
  periodSeconds: 5
livenessProbe:
  httpGet: {path: /healthz, port: {{ include "kproxy.adminPortName" . }}}
  periodSeconds: 10
  failureThreshold: 3
{{- if eq .Values.mode "gateway" }}
lifecycle:
  preStop:
    sleep: {seconds: {{ .Values.gateway.preStopSleepSeconds }}}
{{- end }}
resources:
  {{- toYaml (index .Values.resources .Values.mode) | nindent 2 }}
securityContext:
  runAsNonRoot: true
  runAsUser: 10001
  runAsGroup: 10001
  readOnlyRootFilesystem: true
  allowPrivilegeEscalation: false
  capabilities: {drop: [ALL]}
  seccompProfile: {type: RuntimeDefault}
volumeMounts:
  - {name: kproxy-config, mountPath: /etc/kproxy, readOnly: true}
  - {name: kproxy-events, mountPath: {{ .Values.config.events.dir }}}
{{- range .Values.secretMounts }}
  - {name: {{ .name }}, mountPath: {{ .mountPath }}, readOnly: true}
{{- end }}
{{- end -}}

{{- define "kproxy.adminPortName" -}}
{{- if eq .Values.mode "sidecar" }}kproxy-admin{{ else }}admin{{ end -}}
{{- end -}}

{{- define "kproxy.volumes" -}}
- name: kproxy-config
  configMap: {name: {{ include "kproxy.fullname" . }}}
- name: kproxy-events
  emptyDir: {sizeLimit: {{ .Values.eventsVolume.sizeLimit }}}
{{- range .Values.secretMounts }}
- name: {{ .name }}
  secret: {secretName: {{ .secretName }}}
{{- end }}
{{- end -}}

{{/*
The pod outlives kproxy's drain: before it, the gateway's preStop pause or (sidecar) the
application's own shutdown, as a native sidecar is stopped after the application; then
shutdown.grace_seconds; then slack.
*/}}
{{- define "kproxy.terminationGrace" -}}
{{- $grace := 10 -}}
{{- if hasKey (default (dict) .Values.config.shutdown) "grace_seconds" }}{{ $grace = .Values.config.shutdown.grace_seconds | ceil | int }}{{ end -}}
{{- $before := int .Values.sidecar.app.terminationGracePeriodSeconds -}}
{{- if eq .Values.mode "gateway" }}{{ $before = int .Values.gateway.preStopSleepSeconds }}{{ end -}}
{{- add $grace $before 10 -}}
{{- end -}}
