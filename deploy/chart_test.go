package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

var chartDir = filepath.Join("helm", "portico")

// rendered is one render of the chart, every manifest decoded strictly
// into its Kubernetes API type.
type rendered struct {
	deployment      *appsv1.Deployment
	configMap       *corev1.ConfigMap
	secret          *corev1.Secret // the chart's own, when it makes one
	services        []*corev1.Service
	ingress         *networkingv1.Ingress
	pdb             *policyv1.PodDisruptionBudget
	hpa             *autoscalingv2.HorizontalPodAutoscaler
	serviceMonitor  *monitoringv1.ServiceMonitor
	serviceAccounts []*corev1.ServiceAccount
}

// decodeStrict decodes one manifest into the type its apiVersion and kind
// name; a field the type does not have, a duplicate key or an unknown kind
// fails.
func (r *rendered) decodeStrict(name, doc string) error {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	var obj any
	switch head.APIVersion + " " + head.Kind {
	case "apps/v1 Deployment":
		r.deployment = &appsv1.Deployment{}
		obj = r.deployment
	case "v1 ConfigMap":
		r.configMap = &corev1.ConfigMap{}
		obj = r.configMap
	case "v1 Secret":
		r.secret = &corev1.Secret{}
		obj = r.secret
	case "v1 Service":
		s := &corev1.Service{}
		r.services = append(r.services, s)
		obj = s
	case "v1 ServiceAccount":
		s := &corev1.ServiceAccount{}
		r.serviceAccounts = append(r.serviceAccounts, s)
		obj = s
	case "networking.k8s.io/v1 Ingress":
		r.ingress = &networkingv1.Ingress{}
		obj = r.ingress
	case "policy/v1 PodDisruptionBudget":
		r.pdb = &policyv1.PodDisruptionBudget{}
		obj = r.pdb
	case "autoscaling/v2 HorizontalPodAutoscaler":
		r.hpa = &autoscalingv2.HorizontalPodAutoscaler{}
		obj = r.hpa
	case "monitoring.coreos.com/v1 ServiceMonitor":
		r.serviceMonitor = &monitoringv1.ServiceMonitor{}
		obj = r.serviceMonitor
	default:
		return fmt.Errorf("%s: no API type for %s %s", name, head.APIVersion, head.Kind)
	}
	if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
		return fmt.Errorf("%s: strict decode into %T: %w", name, obj, err)
	}
	return nil
}

// chartValues reads a values file of the chart (empty: none) and lays the
// overrides, in YAML, over it.
func chartValues(t *testing.T, file, overrides string) map[string]any {
	t.Helper()
	vals := map[string]any{}
	if file != "" {
		v, err := chartutil.ReadValuesFile(filepath.Join(chartDir, file))
		if err != nil {
			t.Fatal(err)
		}
		vals = v
	}
	if overrides != "" {
		var o map[string]any
		if err := yaml.Unmarshal([]byte(overrides), &o); err != nil {
			t.Fatal(err)
		}
		vals = chartutil.CoalesceTables(o, vals)
	}
	return vals
}

// renderChart is `helm template portico deploy/helm/portico` with vals.
func renderChart(vals map[string]any) (*rendered, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return nil, err
	}
	install := action.NewInstall(&action.Configuration{})
	install.DryRun = true
	install.ClientOnly = true
	install.Replace = true
	install.ReleaseName = "portico"
	install.Namespace = "rpc"
	rel, err := install.Run(ch, vals)
	if err != nil {
		return nil, err
	}
	r := &rendered{}
	docs := releaseutil.SplitManifests(rel.Manifest)
	names := make([]string, 0, len(docs))
	for name := range docs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := r.decodeStrict(name, docs[name]); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// lintChart is `helm lint --strict` with vals: warnings fail too.
func lintChart(t *testing.T, vals map[string]any) {
	t.Helper()
	lint := action.NewLint()
	lint.Strict = true
	lint.Namespace = "rpc"
	res := lint.Run([]string{chartDir}, vals)
	for _, m := range res.Messages {
		if m.Severity >= support.WarningSev {
			t.Errorf("helm lint: %s", m)
		}
	}
	for _, err := range res.Errors {
		t.Errorf("helm lint: %v", err)
	}
}

func TestChart(t *testing.T) {
	tests := []struct {
		name      string
		file      string // values file in the chart, besides values.yaml
		overrides string
		wantErr   string // the render fails naming this
		check     func(t *testing.T, r *rendered)
	}{
		{
			name: "defaults: one replica on the embedded devnets",
			check: func(t *testing.T, r *rendered) {
				if got := *r.deployment.Spec.Replicas; got != 1 {
					t.Errorf("replicas %d", got)
				}
				if r.secret != nil || r.ingress != nil || r.hpa != nil || r.serviceMonitor != nil {
					t.Error("defaults render a Secret, Ingress, HPA or ServiceMonitor")
				}
				if r.pdb == nil {
					t.Error("no PodDisruptionBudget")
				}
			},
		},
		{
			name: "three replicas with external PostgreSQL and Redis (docs/deploy.md)",
			file: "examples/three-replicas.yaml",
			check: func(t *testing.T, r *rendered) {
				if got := *r.deployment.Spec.Replicas; got != 3 {
					t.Errorf("replicas %d", got)
				}
				env := envOf(r.deployment)
				for _, name := range []string{"PORTICO_POSTGRES_URL", "PORTICO_REDIS_URL", "PORTICO_ADMIN_TOKEN", "PORTICO_API_KEY_BACKEND"} {
					if e, ok := env[name]; !ok || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != "portico-shared" {
						t.Errorf("%s is not taken from Secret portico-shared: %+v", name, e)
					}
				}
				if r.secret != nil {
					t.Error("the chart made a Secret though every secret is an existing one")
				}
				var hosts []string
				for _, rule := range r.ingress.Spec.Rules {
					hosts = append(hosts, rule.Host)
				}
				if want := []string{"eth.rpc.example.com", "sol.rpc.example.com"}; !slices.Equal(hosts, want) {
					t.Errorf("ingress hosts %v, want %v", hosts, want)
				}
				if r.serviceMonitor == nil || r.serviceMonitor.Spec.Endpoints[0].Port != "metrics" {
					t.Errorf("ServiceMonitor %+v", r.serviceMonitor)
				}
				cfg := r.configMap.Data["portico.yaml"]
				for _, want := range []string{"postgres: ${PORTICO_POSTGRES_URL}", "redis: ${PORTICO_REDIS_URL}", "token: ${PORTICO_ADMIN_TOKEN}", "key: ${PORTICO_API_KEY_BACKEND}"} {
					if !strings.Contains(cfg, want) {
						t.Errorf("portico.yaml lacks %q:\n%s", want, cfg)
					}
				}
			},
		},
		{
			name: "inline secrets, a Service per network, autoscaling, metrics on the shared port",
			overrides: `
replicaCount: 2
autoscaling: {enabled: true, minReplicas: 2, maxReplicas: 6}
postgres: {url: "postgres://portico:pw@pg:5432/portico"}
redis: {url: "redis://redis:6379/0", cache: false}
adminToken: {value: "0123456789abcdef0123456789abcdef"}
apiKeys:
  - {name: web-app, key: "abcdefabcdefabcdefabcdefabcdef01", daily_credits: 1000}
  - {name: ops, hash: "` + strings.Repeat("ab", 32) + `"}
service: {perNetwork: true}
metricsPort: 0
serviceMonitor: {enabled: true}
config:
  metrics: null
  networks:
    - {name: eth-mainnet, family: evm, upstreams: [{url: "https://a.example/"}]}
    - {name: starknet-main, family: starknet, listen: "0.0.0.0:9545", upstreams: [{url: "https://b.example/"}]}
    - {name: sol, family: solana, listen: "off", upstreams: [{url: "https://c.example/"}]}
`,
			check: func(t *testing.T, r *rendered) {
				if r.deployment.Spec.Replicas != nil {
					t.Errorf("replicas set (%d) though the HPA scales", *r.deployment.Spec.Replicas)
				}
				if r.hpa == nil || r.hpa.Spec.ScaleTargetRef.Name != r.deployment.Name || r.hpa.Spec.MaxReplicas != 6 {
					t.Errorf("HPA %+v", r.hpa)
				}
				want := map[string]string{"postgres-url": "postgres://portico:pw@pg:5432/portico", "redis-url": "redis://redis:6379/0", "admin-token": "0123456789abcdef0123456789abcdef", "api-key-web-app": "abcdefabcdefabcdefabcdefabcdef01"}
				if r.secret == nil || !mapsEqual(r.secret.StringData, want) {
					t.Errorf("the chart's Secret holds %v, want %v", r.secret, want)
				}
				ports := map[string]int32{}
				for _, s := range r.services {
					ports[s.Name] = s.Spec.Ports[0].Port
				}
				if want := map[string]int32{"portico": 8700, "portico-eth-mainnet": 8701, "portico-starknet-main": 9545}; !mapsEqual(ports, want) {
					t.Errorf("services %v, want %v", ports, want)
				}
				cfg := r.configMap.Data["portico.yaml"]
				if strings.Contains(cfg, "cache:") || strings.Contains(cfg, "metrics:") {
					t.Errorf("portico.yaml shares the cache or moves metrics though told not to:\n%s", cfg)
				}
				if r.serviceMonitor.Spec.Endpoints[0].Port != "http" {
					t.Errorf("ServiceMonitor scrapes port %q, want http", r.serviceMonitor.Spec.Endpoints[0].Port)
				}
			},
		},
		{
			name: "three replicas on a Redis Cluster",
			overrides: `
replicaCount: 3
postgres: {url: "postgres://portico:pw@pg:5432/portico"}
redis:
  addrs: [redis-0.redis:6379, redis-1.redis:6379, redis-2.redis:6379]
  passwordSecret: {name: redis-auth, key: password}
  tls: true
  leaseTTL: 3s
config:
  networks:
    - {name: eth-mainnet, family: evm, upstreams: [{url: "https://a.example/"}]}
`,
			check: func(t *testing.T, r *rendered) {
				env := envOf(r.deployment)
				if e, ok := env["PORTICO_REDIS_PASSWORD"]; !ok || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef.Name != "redis-auth" {
					t.Errorf("PORTICO_REDIS_PASSWORD is not taken from Secret redis-auth: %+v", e)
				}
				cfg := r.configMap.Data["portico.yaml"]
				for _, want := range []string{"redis_addrs:", "- redis-0.redis:6379", "redis_password: ${PORTICO_REDIS_PASSWORD}", "redis_tls: true", "lease_ttl: 3s"} {
					if !strings.Contains(cfg, want) {
						t.Errorf("portico.yaml lacks %q:\n%s", want, cfg)
					}
				}
				if strings.Contains(cfg, "redis_master_name") || strings.Contains(cfg, "cache:") {
					t.Errorf("portico.yaml names a Sentinel master or a cache Redis:\n%s", cfg)
				}
			},
		},
		{
			name: "Sentinel",
			overrides: `
redis: {addrs: ["sentinel-0:26379", "sentinel-1:26379"], masterName: mymaster, password: pw}
`,
			check: func(t *testing.T, r *rendered) {
				cfg := r.configMap.Data["portico.yaml"]
				for _, want := range []string{"redis_master_name: mymaster", "- sentinel-1:26379", "redis_password: ${PORTICO_REDIS_PASSWORD}"} {
					if !strings.Contains(cfg, want) {
						t.Errorf("portico.yaml lacks %q:\n%s", want, cfg)
					}
				}
				if r.secret == nil || r.secret.StringData["redis-password"] != "pw" {
					t.Errorf("the chart's Secret lacks redis-password: %+v", r.secret)
				}
			},
		},
		{name: "redis url and addrs", overrides: "redis: {url: redis://r:6379/0, addrs: [a:6379]}", wantErr: "redis: set url (one server) or addrs"},
		{name: "three replicas without PostgreSQL", overrides: "replicaCount: 3\nredis: {url: redis://r:6379/0}\nconfig: {networks: [{name: e, family: evm, upstreams: [{url: 'https://a.example/'}]}]}", wantErr: "postgres: more than one replica needs PostgreSQL"},
		{name: "three replicas without Redis", overrides: "replicaCount: 3\npostgres: {url: postgres://p/x}\nconfig: {networks: [{name: e, family: evm, upstreams: [{url: 'https://a.example/'}]}]}", wantErr: "redis: more than one replica needs Redis"},
		{name: "autoscaling on devnets", overrides: "autoscaling: {enabled: true}\npostgres: {url: postgres://p/x}\nredis: {url: redis://r:6379/0}", wantErr: "config.networks: more than one replica"},
		{name: "ingress to a network without hosts", overrides: "ingress: {enabled: true}\nconfig: {networks: [{name: e, family: evm, upstreams: [{url: 'https://a.example/'}]}]}", wantErr: "ingress: network e has no hosts"},
		{name: "an API key with both key and hash", overrides: "apiKeys: [{name: k, key: abcdefabcdefabcdefabcdefabcdef01, hash: '" + strings.Repeat("ab", 32) + "'}]", wantErr: "needs a name and exactly one of key, hash, existingSecret"},
	}
	rel := releaseBinary(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vals := chartValues(t, tc.file, tc.overrides)
			r, err := renderChart(vals)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("render: %v, want an error naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			lintChart(t, vals)
			checkConsistent(t, r)
			checkChartConfig(t, rel.Binary, r)
			tc.check(t, r)
		})
	}
}

// checkConsistent checks what ties the objects together: selectors match
// the pods, ports and probes name the container's ports, secrets referred
// to exist when the chart makes them, and the pods run as the image's
// non-root user.
func checkConsistent(t *testing.T, r *rendered) {
	t.Helper()
	d := r.deployment
	if d == nil || r.configMap == nil {
		t.Fatal("no Deployment or ConfigMap")
	}
	pod := labels.Set(d.Spec.Template.Labels)
	sel := labels.SelectorFromSet(d.Spec.Selector.MatchLabels)
	if !sel.Matches(pod) {
		t.Errorf("the Deployment's selector %v does not match its pods %v", sel, pod)
	}
	c := d.Spec.Template.Spec.Containers[0]
	portNames := map[string]int32{}
	for _, p := range c.Ports {
		if _, dup := portNames[p.Name]; dup || len(p.Name) > 15 {
			t.Errorf("container port name %q repeated or too long", p.Name)
		}
		portNames[p.Name] = p.ContainerPort
	}
	for _, s := range r.services {
		if !labels.SelectorFromSet(s.Spec.Selector).Matches(pod) {
			t.Errorf("Service %s selects %v, not the pods", s.Name, s.Spec.Selector)
		}
		for _, p := range s.Spec.Ports {
			if _, ok := portNames[p.TargetPort.StrVal]; !ok {
				t.Errorf("Service %s targets port %q the container lacks", s.Name, p.TargetPort.StrVal)
			}
		}
	}
	if r.pdb != nil && !labels.SelectorFromSet(r.pdb.Spec.Selector.MatchLabels).Matches(pod) {
		t.Error("the PodDisruptionBudget does not select the pods")
	}
	if sm := r.serviceMonitor; sm != nil {
		matched := 0
		for _, s := range r.services {
			if labels.SelectorFromSet(sm.Spec.Selector.MatchLabels).Matches(labels.Set(s.Labels)) {
				matched++
			}
		}
		if matched != 1 {
			t.Errorf("the ServiceMonitor selects %d Services, want the shared one", matched)
		}
	}
	if ing := r.ingress; ing != nil {
		for _, rule := range ing.Spec.Rules {
			b := rule.HTTP.Paths[0].Backend.Service
			if b.Name != r.services[0].Name || b.Port.Name != "http" {
				t.Errorf("ingress rule %s goes to %s:%s", rule.Host, b.Name, b.Port.Name)
			}
		}
	}
	probes := map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe}
	for path, p := range probes {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port.StrVal != "http" {
			t.Errorf("probe for %s: %+v", path, p)
		}
	}
	if c.StartupProbe == nil || c.StartupProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("startup probe %+v", c.StartupProbe)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("no resource requests: %+v", c.Resources)
	}
	psc := d.Spec.Template.Spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != imageUID {
		t.Errorf("pod security context %+v", psc)
	}
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("container security context %+v", c.SecurityContext)
	}
	for _, e := range c.Env {
		ref := e.ValueFrom.SecretKeyRef
		if ref.Name == d.Name {
			if r.secret == nil || r.secret.StringData[ref.Key] == "" {
				t.Errorf("%s refers to key %s of the chart's Secret, which does not hold it", e.Name, ref.Key)
			}
		}
	}
}

// checkChartConfig runs `portico config check` on the ConfigMap's
// portico.yaml with the environment the pods get: the chart's Secret's
// values, and for an existing Secret a value of the right form.
func checkChartConfig(t *testing.T, portico string, r *rendered) {
	t.Helper()
	stand := map[string]string{
		"PORTICO_POSTGRES_URL": "postgres://portico:secret@postgres:5432/portico?sslmode=require",
		"PORTICO_REDIS_URL":    "rediss://:secret@redis:6380/0",
		"PORTICO_ADMIN_TOKEN":  "an-admin-token-of-enough-length",
	}
	var env []string
	for _, e := range r.deployment.Spec.Template.Spec.Containers[0].Env {
		ref := e.ValueFrom.SecretKeyRef
		v := stand[e.Name]
		switch {
		case r.secret != nil && ref.Name == r.secret.Name:
			v = r.secret.StringData[ref.Key]
		case strings.HasPrefix(e.Name, "PORTICO_API_KEY_"):
			v = strings.Repeat("k", 32)
		}
		env = append(env, e.Name+"="+v)
	}
	file := filepath.Join(t.TempDir(), "portico.yaml")
	if err := os.WriteFile(file, []byte(r.configMap.Data["portico.yaml"]), 0o644); err != nil {
		t.Fatal(err)
	}
	configCheck(t, portico, file, env)
	// Every ${VAR} of the config is an env var the pod has.
	for _, m := range regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`).FindAllStringSubmatch(r.configMap.Data["portico.yaml"], -1) {
		if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, m[1]+"=") }) {
			t.Errorf("portico.yaml uses ${%s}, which the pod does not have", m[1])
		}
	}
}

// configCheck runs `portico config check --config file` with only env (and
// PATH) in the environment, and wants "ok".
func configCheck(t *testing.T, portico, file string, env []string) {
	t.Helper()
	cmd := exec.Command(portico, "config", "check", "--config", file)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		cfg, _ := os.ReadFile(file)
		t.Errorf("portico config check: %v\n%s\n%s", err, out, cfg)
	}
}

// envOf returns the portico container's environment by name.
func envOf(d *appsv1.Deployment) map[string]corev1.EnvVar {
	out := map[string]corev1.EnvVar{}
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		out[e.Name] = e
	}
	return out
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
