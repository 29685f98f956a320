package deploy

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/opencontainers/image-spec/specs-go/v1"
)

// imageUID is the user the image runs as (Containerfile's USER).
const imageUID = 65532

// imageFiles is everything the image holds, with its owner and mode: the
// binary, the CA bundle, the user's names and the data directory. Nothing
// else, and so no shell.
var imageFiles = map[string]string{
	"etc/":                              "0:0 dir",
	"etc/group":                         "0:0 file",
	"etc/passwd":                        "0:0 file",
	"etc/ssl/":                          "0:0 dir",
	"etc/ssl/certs/":                    "0:0 dir",
	"etc/ssl/certs/ca-certificates.crt": "0:0 file",
	"usr/":                              "0:0 dir",
	"usr/local/":                        "0:0 dir",
	"usr/local/bin/":                    "0:0 dir",
	"usr/local/bin/portico":             "0:0 file",
	"var/":                              "0:0 dir",
	"var/lib/":                          "0:0 dir",
	"var/lib/portico/":                  "65532:65532 dir",
}

// imageBuilder returns buildah, else podman: the Debian packages that build
// images without a daemon. scripts/install-deploy-deps.sh installs buildah.
func imageBuilder(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"buildah", "podman"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	missing(t, "neither buildah nor podman is installed (Debian: buildah; scripts/install-deploy-deps.sh installs it)")
	return ""
}

// TestImage builds Containerfile's final stage with buildah (or podman) and
// no network, takes the image apart, and runs its entrypoint to ready.
//
// The build stage (Go image, module proxy) cannot run here. buildah's
// --build-context build=DIR stands DIR in for it, laid out as the build
// stage leaves its files: /out/portico (here the release snapshot, built
// by the same flags), /out/data, and the CA bundle at Debian's path (the
// host's, which is Debian's). So the final stage, the image's config and
// the binary are tested as shipped; the build stage's own commands are not.
func TestImage(t *testing.T) {
	builder := imageBuilder(t)
	rel := releaseBinary(t)
	work := t.TempDir()

	stage := filepath.Join(work, "build-stage")
	for _, dir := range []string{"out", "etc/ssl/certs"} {
		if err := os.MkdirAll(filepath.Join(stage, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(stage, "out", "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	copyFile(t, rel.Binary, filepath.Join(stage, "out", "portico"), 0o755)
	copyFile(t, "/etc/ssl/certs/ca-certificates.crt", filepath.Join(stage, "etc/ssl/certs/ca-certificates.crt"), 0o644)

	// A private store: the test leaves no image behind and needs no daemon.
	store := []string{"--root", filepath.Join(work, "storage"), "--runroot", filepath.Join(work, "run"), "--storage-driver", "vfs"}
	tag := "localhost/portico-test:" + strings.ReplaceAll(rel.Version, "+", "_")
	build := append(slices.Clone(store), "build",
		"--build-context", "build="+stage,
		"--build-arg", "VERSION="+rel.Version, "--build-arg", "COMMIT="+rel.Commit,
		"-f", filepath.Join(repoRoot, "Containerfile"), "-t", tag, repoRoot)
	// Nothing may come from a registry: the final stage is FROM scratch.
	build = append(build[:len(build)-1], "--pull=never", repoRoot)
	run(t, builder, build...)
	layout := filepath.Join(work, "oci")
	run(t, builder, append(slices.Clone(store), "push", tag, "oci:"+layout+":portico")...)

	cfg, layers := readOCI(t, layout)
	rootfs := filepath.Join(work, "rootfs")
	files := map[string]string{}
	for _, l := range layers {
		extractLayer(t, l, rootfs, files)
	}
	for name, want := range imageFiles {
		if files[name] != want {
			t.Errorf("image file %s: %q, want %q", name, files[name], want)
		}
	}
	for name, got := range files {
		if _, ok := imageFiles[name]; !ok {
			t.Errorf("image has %s (%s), which it should not", name, got)
		}
	}

	c := cfg.Config
	if c.User != fmt.Sprintf("%d:%d", imageUID, imageUID) {
		t.Errorf("image user %q, want %d:%d (not root)", c.User, imageUID, imageUID)
	}
	if want := []string{"/usr/local/bin/portico"}; !slices.Equal(c.Entrypoint, want) {
		t.Errorf("entrypoint %q, want %q", c.Entrypoint, want)
	}
	if want := []string{"serve"}; !slices.Equal(c.Cmd, want) {
		t.Errorf("cmd %q, want %q", c.Cmd, want)
	}
	if c.WorkingDir != "/var/lib/portico" {
		t.Errorf("working dir %q", c.WorkingDir)
	}
	if _, ok := c.Volumes["/var/lib/portico"]; !ok {
		t.Errorf("no volume at /var/lib/portico: %v", c.Volumes)
	}
	for _, p := range []string{"8700/tcp", "8701/tcp", "8702/tcp", "8703/tcp"} {
		if _, ok := c.ExposedPorts[p]; !ok {
			t.Errorf("port %s not exposed: %v", p, c.ExposedPorts)
		}
	}
	if got := c.Labels["org.opencontainers.image.version"]; got != rel.Version {
		t.Errorf("version label %q, want %q", got, rel.Version)
	}
	if cfg.Architecture != "amd64" && cfg.Architecture != "arm64" || cfg.OS != "linux" {
		t.Errorf("image platform %s/%s", cfg.OS, cfg.Architecture)
	}

	bin := filepath.Join(rootfs, "usr/local/bin/portico")
	if err := elfStatic(bin); err != nil {
		t.Error(err)
	}
	pem, err := os.ReadFile(filepath.Join(rootfs, "etc/ssl/certs/ca-certificates.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if pool := x509.NewCertPool(); !pool.AppendCertsFromPEM(pem) {
		t.Error("the image's CA bundle holds no certificate")
	}

	// Run the entrypoint and cmd with the image's environment, as a
	// container runtime would, but on loopback and a free port.
	env := append(slices.Clone(c.Env), "PORTICO_LISTEN=127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var cmd *exec.Cmd
	if os.Geteuid() == 0 {
		// Inside the image's filesystem, as its user: nothing of the host's
		// files is reachable, so the binary runs on what the image has.
		cmd = exec.CommandContext(ctx, c.Entrypoint[0], c.Cmd...)
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Chroot:     rootfs,
			Credential: &syscall.Credential{Uid: imageUID, Gid: imageUID},
		}
		cmd.Path = c.Entrypoint[0]
		cmd.Dir = c.WorkingDir
		t.Logf("running %s %v chrooted in the image's filesystem as %d", c.Entrypoint[0], c.Cmd, imageUID)
	} else {
		// Without root there is no chroot: the binary runs from the
		// extracted tree, its data directory moved there.
		cmd = exec.CommandContext(ctx, filepath.Join(rootfs, c.Entrypoint[0]), c.Cmd...)
		env = append(env, "PORTICO_DATA_DIR="+filepath.Join(rootfs, "var/lib/portico"))
		t.Logf("not root: running %s from the extracted filesystem without chroot", c.Entrypoint[0])
	}
	cmd.Env = env
	srv := startServe(t, cmd)
	srv.checkServes(t)
	srv.stop(t)
	if _, err := os.Stat(filepath.Join(rootfs, "var/lib/portico/dev-key")); err != nil {
		t.Errorf("the dev key is not in the image's data directory: %v", err)
	}
}

// readOCI reads the one image of an OCI layout: its config and the paths
// of its layers, in order.
func readOCI(t *testing.T, layout string) (v1.Image, []string) {
	t.Helper()
	blob := func(d v1.Descriptor) string {
		return filepath.Join(layout, "blobs", d.Digest.Algorithm().String(), d.Digest.Encoded())
	}
	var index v1.Index
	readJSON(t, filepath.Join(layout, "index.json"), &index)
	if len(index.Manifests) != 1 {
		t.Fatalf("OCI layout has %d manifests", len(index.Manifests))
	}
	var manifest v1.Manifest
	readJSON(t, blob(index.Manifests[0]), &manifest)
	var cfg v1.Image
	readJSON(t, blob(manifest.Config), &cfg)
	var layers []string
	for _, l := range manifest.Layers {
		if l.MediaType != v1.MediaTypeImageLayerGzip && l.MediaType != v1.MediaTypeImageLayer {
			t.Fatalf("layer media type %s", l.MediaType)
		}
		layers = append(layers, blob(l))
	}
	return cfg, layers
}

// extractLayer unpacks one layer (gzip or plain tar) into dir, recording
// each entry's owner and kind in files. Whiteouts cannot occur in an image
// FROM scratch with no deletions, so one fails the test.
func extractLayer(t *testing.T, layer, dir string, files map[string]string) {
	t.Helper()
	f, err := os.Open(layer)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if zr, err := gzip.NewReader(f); err == nil {
		r = zr
	} else if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
		if name == "" || strings.HasPrefix(path.Base(name), ".wh.") {
			if name != "" {
				t.Fatalf("whiteout %s in an image FROM scratch", h.Name)
			}
			continue
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		owner := strconv.Itoa(h.Uid) + ":" + strconv.Itoa(h.Gid)
		switch h.Typeflag {
		case tar.TypeDir:
			files[name+"/"] = owner + " dir"
			if err := os.MkdirAll(target, os.FileMode(h.Mode).Perm()); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			files[name] = owner + " file"
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				t.Fatal(err)
			}
			out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode).Perm())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(out, tr); err != nil {
				t.Fatal(err)
			}
			out.Close()
		default:
			files[name] = owner + " " + string(h.Typeflag)
			continue
		}
		if os.Geteuid() == 0 {
			if err := os.Lchown(target, h.Uid, h.Gid); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(target, os.FileMode(h.Mode).Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

func readJSON(t *testing.T, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, mode); err != nil {
		t.Fatal(err)
	}
}

// run runs a tool and fails the test with its output when it fails.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// missing fails the test under PORTICO_TEST_STRICT=1 (make test, whose
// scripts install every tool these tests need) and skips it otherwise,
// saying what is missing.
func missing(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("PORTICO_TEST_STRICT") == "1" {
		t.Fatalf("%s (PORTICO_TEST_STRICT=1)", why)
	}
	t.Skip(why)
}
