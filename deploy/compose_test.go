package deploy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"sigs.k8s.io/yaml"
)

var composeFile = filepath.Join("compose", "compose.yaml")

// composeEnv is what docs/deploy.md has the reader export first.
var composeEnv = []string{
	"PORTICO_ADMIN_TOKEN=" + strings.Repeat("t", 48),
	"PORTICO_DEMO_KEY=" + strings.Repeat("d", 32),
}

// loadCompose loads compose.yaml as `docker compose` does, with compose-go
// (the library docker compose is built on): the compose specification's
// schema, interpolation, merge keys, and every reference between services,
// volumes and networks checked.
func loadCompose(t *testing.T, env []string) (*types.Project, error) {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{composeFile}, cli.WithEnv(env), cli.WithInterpolation(true), cli.WithConsistency(true), cli.WithResolvedPaths(true))
	if err != nil {
		t.Fatal(err)
	}
	return opts.LoadProject(context.Background())
}

// TestCompose checks deploy/compose: the file loads and is consistent under
// the compose specification, it runs two instances on the image with
// PostgreSQL, Redis, Prometheus and Grafana, every file it mounts exists,
// their config passes `portico config check`, Prometheus scrapes both, and
// `docker compose config` accepts it where the compose plugin is installed.
func TestCompose(t *testing.T) {
	if _, err := loadCompose(t, nil); err == nil || !strings.Contains(err.Error(), "PORTICO_ADMIN_TOKEN") {
		t.Errorf("compose.yaml loads without PORTICO_ADMIN_TOKEN (%v); it must say to set it", err)
	}
	p, err := loadCompose(t, composeEnv)
	if err != nil {
		t.Fatalf("compose-go: %v", err)
	}
	var names []string
	for name := range p.Services {
		names = append(names, name)
	}
	sort.Strings(names)
	want := []string{"devnet-evm", "devnet-solana", "devnet-starknet", "grafana", "portico-1", "portico-2", "postgres", "prometheus", "redis"}
	if !slices.Equal(names, want) {
		t.Errorf("services %v, want %v", names, want)
	}

	abs, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"portico-1", "portico-2"} {
		s := p.Services[name]
		if s.Build == nil || s.Build.Context != abs || s.Build.Dockerfile != "Containerfile" {
			t.Errorf("%s builds %+v, want the repository's Containerfile", name, s.Build)
		}
		for _, dep := range []string{"postgres", "redis"} {
			if s.DependsOn[dep].Condition != types.ServiceConditionHealthy {
				t.Errorf("%s does not wait for %s to be healthy", name, dep)
			}
		}
		if !s.ReadOnly || !slices.Equal(s.CapDrop, []string{"ALL"}) {
			t.Errorf("%s: read_only %v, cap_drop %v", name, s.ReadOnly, s.CapDrop)
		}
		var config string
		for _, v := range s.Volumes {
			if v.Target == "/etc/portico/portico.yaml" {
				config = v.Source
			}
		}
		if config == "" {
			t.Fatalf("%s mounts no config", name)
		}
		var env []string
		for k, v := range s.Environment {
			env = append(env, k+"="+*v)
		}
		configCheck(t, releaseBinary(t).Binary, config, env)
	}
	if a, b := p.Services["portico-1"].Ports[0].Published, p.Services["portico-2"].Ports[0].Published; a == b {
		t.Errorf("both instances publish port %s", a)
	}
	for _, s := range p.Services {
		for _, v := range s.Volumes {
			if v.Type != types.VolumeTypeBind {
				continue
			}
			if _, err := os.Stat(v.Source); err != nil {
				t.Errorf("%s mounts %s: %v", s.Name, v.Source, err)
			}
		}
	}

	// Prometheus scrapes both instances on their metrics listener.
	var prom struct {
		ScrapeConfigs []struct {
			StaticConfigs []struct {
				Targets []string `json:"targets"`
			} `json:"static_configs"`
		} `json:"scrape_configs"`
	}
	b, err := os.ReadFile(filepath.Join("compose", "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &prom); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join("compose", "portico.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfg), "listen: 0.0.0.0:9464") {
		t.Error("portico.yaml does not put metrics on :9464")
	}
	if got := prom.ScrapeConfigs[0].StaticConfigs[0].Targets; !slices.Equal(got, []string{"portico-1:9464", "portico-2:9464"}) {
		t.Errorf("Prometheus scrapes %v", got)
	}

	t.Run("docker compose config", func(t *testing.T) {
		if err := exec.Command("docker", "compose", "version").Run(); err != nil {
			// Debian has no package of the compose plugin (its
			// docker-compose is the old Python one); compose-go above is
			// the loader the plugin runs.
			t.Skip("docker compose (the compose plugin) is not installed; compose.yaml was checked with compose-go, the library docker compose loads files with")
		}
		cmd := exec.Command("docker", "compose", "-f", composeFile, "config", "--quiet")
		cmd.Env = append(os.Environ(), composeEnv...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("docker compose config: %v\n%s", err, out)
		}
	})
}
