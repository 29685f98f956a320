{{/* The chart's name, cut to Kubernetes' 63 characters. */}}
{{- define "portico.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's full name: the prefix of every object. */}}
{{- define "portico.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "portico.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "portico.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "portico.selectorLabels" -}}
app.kubernetes.io/name: {{ include "portico.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "portico.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "portico.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "portico.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "portico.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/*
portico.secrets lists every secret the pods get as an environment variable,
as JSON: [{env, secret, key, value}], value set when the chart's own Secret
holds it. A value given neither inline nor as an existing Secret is left out.
*/}}
{{- define "portico.secrets" -}}
{{- $fullname := include "portico.fullname" . -}}
{{- $out := list -}}
{{- range $s := list (list "PORTICO_POSTGRES_URL" .Values.postgres.url .Values.postgres.existingSecret "postgres-url") (list "PORTICO_REDIS_URL" .Values.redis.url .Values.redis.existingSecret "redis-url") (list "PORTICO_REDIS_PASSWORD" .Values.redis.password .Values.redis.passwordSecret "redis-password") (list "PORTICO_ADMIN_TOKEN" .Values.adminToken.value .Values.adminToken.existingSecret "admin-token") -}}
{{- $env := index $s 0 -}}{{- $value := index $s 1 -}}{{- $existing := index $s 2 -}}{{- $key := index $s 3 -}}
{{- if $existing.name -}}
{{- $out = append $out (dict "env" $env "secret" $existing.name "key" (default $key $existing.key)) -}}
{{- else if $value -}}
{{- $out = append $out (dict "env" $env "secret" $fullname "key" $key "value" $value) -}}
{{- end -}}
{{- end -}}
{{- range $k := .Values.apiKeys -}}
{{- $env := printf "PORTICO_API_KEY_%s" ($k.name | upper | replace "-" "_") -}}
{{- if and $k.existingSecret $k.existingSecret.name -}}
{{- $out = append $out (dict "env" $env "secret" $k.existingSecret.name "key" (default $k.name $k.existingSecret.key)) -}}
{{- else if $k.key -}}
{{- $out = append $out (dict "env" $env "secret" $fullname "key" (printf "api-key-%s" $k.name) "value" $k.key) -}}
{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/* portico.has is "true" when the named environment variable is given. */}}
{{- define "portico.has" -}}
{{- range (include "portico.secrets" .root | fromJsonArray) -}}
{{- if eq .env $.env }}true{{ end -}}
{{- end -}}
{{- end -}}

{{/* portico.check fails the render on values that cannot work. */}}
{{- define "portico.check" -}}
{{- $many := or (gt (int .Values.replicaCount) 1) .Values.autoscaling.enabled -}}
{{- if $many -}}
{{- if not (include "portico.has" (dict "root" . "env" "PORTICO_POSTGRES_URL")) -}}
{{- fail "postgres: more than one replica needs PostgreSQL (postgres.url or postgres.existingSecret): replicas share keys and usage through it" -}}
{{- end -}}
{{- if not (or (include "portico.has" (dict "root" . "env" "PORTICO_REDIS_URL")) .Values.redis.addrs) -}}
{{- fail "redis: more than one replica needs Redis (redis.url, redis.existingSecret or redis.addrs): replicas share credits through it" -}}
{{- end -}}
{{- if not .Values.config.networks -}}
{{- fail "config.networks: more than one replica needs networks with upstreams; without them each replica runs devnets of its own" -}}
{{- end -}}
{{- end -}}
{{- if .Values.ingress.enabled -}}
{{- if not .Values.config.networks -}}
{{- fail "ingress: list config.networks with their hosts; the Ingress has one rule per host" -}}
{{- end -}}
{{- range .Values.config.networks -}}
{{- if not .hosts -}}
{{- fail (printf "ingress: network %s has no hosts; the Ingress routes by host" .name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range .Values.apiKeys -}}
{{- $n := 0 -}}
{{- if .key }}{{ $n = add1 $n }}{{ end -}}
{{- if .hash }}{{ $n = add1 $n }}{{ end -}}
{{- if and .existingSecret .existingSecret.name }}{{ $n = add1 $n }}{{ end -}}
{{- if or (not .name) (ne $n 1) -}}
{{- fail (printf "apiKeys: %v needs a name and exactly one of key, hash, existingSecret" .) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* portico.config is portico.yaml: .Values.config with the chart's fields set. */}}
{{- define "portico.config" -}}
{{- $cfg := deepCopy .Values.config -}}
{{- $_ := set $cfg "listen" (printf "0.0.0.0:%v" .Values.service.port) -}}
{{- $_ = set $cfg "data_dir" "/var/lib/portico" -}}
{{- $metrics := dict -}}
{{- if hasKey $cfg "metrics" }}{{ $metrics = get $cfg "metrics" }}{{ end -}}
{{- if .Values.metricsPort -}}
{{- $_ = set $metrics "listen" (printf "0.0.0.0:%v" .Values.metricsPort) -}}
{{- $_ = set $cfg "metrics" $metrics -}}
{{- end -}}
{{- if include "portico.has" (dict "root" . "env" "PORTICO_POSTGRES_URL") -}}
{{- $store := dict -}}
{{- if hasKey $cfg "store" }}{{ $store = get $cfg "store" }}{{ end -}}
{{- $_ = set $store "postgres" "${PORTICO_POSTGRES_URL}" -}}
{{- $_ = set $cfg "store" $store -}}
{{- end -}}
{{- if include "portico.has" (dict "root" . "env" "PORTICO_REDIS_URL") -}}
{{- $metering := dict -}}
{{- if hasKey $cfg "metering" }}{{ $metering = get $cfg "metering" }}{{ end -}}
{{- $_ = set $metering "redis" "${PORTICO_REDIS_URL}" -}}
{{- $_ = set $cfg "metering" $metering -}}
{{- if .Values.redis.cache -}}
{{- $cache := dict -}}
{{- if hasKey $cfg "cache" }}{{ $cache = get $cfg "cache" }}{{ end -}}
{{- $_ = set $cache "redis" "${PORTICO_REDIS_URL}" -}}
{{- $_ = set $cfg "cache" $cache -}}
{{- end -}}
{{- end -}}
{{- if .Values.redis.addrs -}}
{{- if include "portico.has" (dict "root" . "env" "PORTICO_REDIS_URL") -}}
{{- fail "redis: set url (one server) or addrs (a Cluster or Sentinels), not both" -}}
{{- end -}}
{{- $metering := dict -}}
{{- if hasKey $cfg "metering" }}{{ $metering = get $cfg "metering" }}{{ end -}}
{{- $_ = set $metering "redis_addrs" .Values.redis.addrs -}}
{{- if .Values.redis.masterName }}{{ $_ = set $metering "redis_master_name" .Values.redis.masterName }}{{ end -}}
{{- if .Values.redis.username }}{{ $_ = set $metering "redis_username" .Values.redis.username }}{{ end -}}
{{- if include "portico.has" (dict "root" . "env" "PORTICO_REDIS_PASSWORD") }}{{ $_ = set $metering "redis_password" "${PORTICO_REDIS_PASSWORD}" }}{{ end -}}
{{- if .Values.redis.tls }}{{ $_ = set $metering "redis_tls" true }}{{ end -}}
{{- $_ = set $cfg "metering" $metering -}}
{{- end -}}
{{- if .Values.redis.leaseTTL -}}
{{- $metering := dict -}}
{{- if hasKey $cfg "metering" }}{{ $metering = get $cfg "metering" }}{{ end -}}
{{- $_ = set $metering "lease_ttl" .Values.redis.leaseTTL -}}
{{- $_ = set $cfg "metering" $metering -}}
{{- end -}}
{{- if include "portico.has" (dict "root" . "env" "PORTICO_ADMIN_TOKEN") -}}
{{- $admin := dict -}}
{{- if hasKey $cfg "admin" }}{{ $admin = get $cfg "admin" }}{{ end -}}
{{- $_ = set $admin "token" "${PORTICO_ADMIN_TOKEN}" -}}
{{- $_ = set $cfg "admin" $admin -}}
{{- end -}}
{{- if .Values.apiKeys -}}
{{- $keys := list -}}
{{- range $k := .Values.apiKeys -}}
{{- $entry := omit $k "key" "hash" "existingSecret" -}}
{{- if $k.hash -}}
{{- $_ = set $entry "hash" $k.hash -}}
{{- else -}}
{{- $_ = set $entry "key" (printf "${PORTICO_API_KEY_%s}" ($k.name | upper | replace "-" "_")) -}}
{{- end -}}
{{- $keys = append $keys $entry -}}
{{- end -}}
{{- $_ = set $cfg "keys" $keys -}}
{{- end -}}
{{- if not $cfg.networks }}{{ $_ = unset $cfg "networks" }}{{ end -}}
{{- toYaml $cfg -}}
{{- end -}}

{{/*
portico.networkPorts lists the networks that have a listener of their own,
as JSON [{name, port}]: the shared port + 1 + the network's index, or the
port of its listen:, as portico picks them; "off" has none.
*/}}
{{- define "portico.networkPorts" -}}
{{- $out := list -}}
{{- range $i, $n := .Values.config.networks -}}
{{- if not $n.listen -}}
{{- $out = append $out (dict "name" $n.name "port" (add $.Values.service.port 1 $i)) -}}
{{- else if ne $n.listen "off" -}}
{{- $out = append $out (dict "name" $n.name "port" (regexFind "[0-9]+$" $n.listen | int)) -}}
{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}
