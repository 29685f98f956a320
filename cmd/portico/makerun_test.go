package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// makeRunData is the data directory of the README test's `make run`,
// beside the portico-data its own serve holds; the test made it, not a
// README command.
const makeRunData = "make-run-data"

// demoLineRE matches the last ready line of `make run`'s serve: the demo
// login's, which comes once the auth server answers.
var demoLineRE = regexp.MustCompile(`(?m)^auth: demo login: open (http://\S+)/ and press the button`)

// builtBin is the one binary the tests that run make build (make build,
// make run): go build links a binary again only when it is out of date,
// so sharing its path links it once per test run. TestMain removes it.
var builtBin struct {
	once sync.Once
	dir  string
	err  error
}

// sharedBin returns the path make's BIN gets in tests.
func sharedBin(t *testing.T) string {
	t.Helper()
	builtBin.once.Do(func() { builtBin.dir, builtBin.err = os.MkdirTemp("", "portico-make-") })
	if builtBin.err != nil {
		t.Fatal(builtBin.err)
	}
	return filepath.Join(builtBin.dir, "portico")
}

// removeSharedBin removes sharedBin's directory, if any.
func removeSharedBin() {
	if builtBin.dir != "" {
		os.RemoveAll(builtBin.dir)
	}
}

// goTool is the go command make runs (the one running the tests).
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// readerEnv is the environment of a reader's shell: under `make test`,
// MAKELEVEL and MAKEFLAGS would make a make the test runs a sub-make,
// which prints "Entering directory" lines around its output.
func readerEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(name, "MAKE") && name != "MFLAGS" {
			env = append(env, kv)
		}
	}
	return env
}

// makeBuild runs the README's `make build` in the repository with its BIN
// at sharedBin, and makes bin/portico of the working directory (the
// test's checkout) that binary.
func makeBuild(ctx context.Context, t *testing.T, repo string) error {
	bin := sharedBin(t)
	cmd := exec.CommandContext(ctx, "make", "build", "BIN="+bin, "GO="+goTool())
	cmd.Dir, cmd.Env = repo, readerEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("make build: %v\n%s", err, out)
	}
	if err := os.MkdirAll("bin", 0o755); err != nil {
		return err
	}
	return os.Symlink(bin, filepath.Join("bin", "portico"))
}

// process is a bin/portico server run as a process of its own.
type process struct {
	cmd  *exec.Cmd
	out  *watched
	errs *lockedBuffer
	done chan struct{}
	err  error
}

// startProcess starts bin/portico args in the working directory; the test
// kills it at the end if stop was not called.
func startProcess(ctx context.Context, t *testing.T, args []string) (*process, error) {
	p := &process{out: &watched{ch: make(chan struct{})}, errs: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd = exec.CommandContext(ctx, "bin/portico", args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.errs
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { defer close(p.done); p.err = p.cmd.Wait() }()
	t.Cleanup(func() { p.cmd.Process.Kill(); <-p.done })
	return p, nil
}

// wait returns the first match of re in the process's output.
func (p *process) wait(ctx context.Context, re *regexp.Regexp) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	m, err := p.out.waitFor(ctx, re, p.done)
	if err != nil {
		return "", fmt.Errorf("%v: %w (exit: %v)\n%s\n%s", p.cmd.Args, err, p.err, p.out, p.errs)
	}
	return m, nil
}

// stop sends SIGINT, as Ctrl-C does, and wants exit status 0.
func (p *process) stop() error {
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		return err
	}
	<-p.done
	if p.err != nil {
		return fmt.Errorf("%v after SIGINT: %w\n%s", p.cmd.Args, p.err, p.errs)
	}
	return nil
}

// checkReadyLines: each ready line the README shows is one serve prints,
// up to its elisions (…), ports (the README's defaults) and the data
// directory's absolute path.
func checkReadyLines(t *testing.T, doc, out string) {
	block := regexp.MustCompile("(?s)\n```\n(portico ready on .*?)\n```\n").FindStringSubmatch(doc)
	if block == nil {
		t.Fatal("the README shows no ready lines (a ``` block starting with \"portico ready on\")")
	}
	for _, line := range strings.Split(block[1], "\n") {
		re := regexp.QuoteMeta(line)
		// A key or token's first characters and … stand for the whole.
		re = regexp.MustCompile(`\b[0-9a-f]{4}…`).ReplaceAllString(re, `[0-9a-f]+`)
		re = strings.ReplaceAll(re, "…", ".*")
		re = regexp.MustCompile(`:(8700|8701|8702|8703|8550)\b`).ReplaceAllString(re, `:\d+`)
		re = strings.ReplaceAll(re, "portico-data/", `\S*portico-data/`)
		if !regexp.MustCompile("(?m)^" + re + "$").MatchString(out) {
			t.Errorf("the README's ready line %q is not among serve's:\n%s", line, out)
		}
	}
}

// checkDevDashboard: the dashboard's ready line (make run's, with a dev
// admin token) names a dashboard whose sign-in takes that token.
func checkDevDashboard(t *testing.T, out string) {
	m := devDashboardRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no dashboard line with a dev admin token in:\n%s", out)
	}
	dash, token := m[1], m[2]
	if b, err := os.ReadFile(filepath.Join("portico-data", DevAdminTokenFile)); err != nil || strings.TrimSpace(string(b)) != token {
		t.Errorf("portico-data/%s: %q %v, the line says %s", DevAdminTokenFile, b, err, token)
	}
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar}
	u, _ := url.Parse(dash)
	req, _ := http.NewRequest(http.MethodPost, dash+"signin", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", u.Scheme+"://"+u.Host)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	page, err := client.Get(dash)
	if err != nil {
		t.Fatal(err)
	}
	defer page.Body.Close()
	body := make([]byte, 64<<10)
	n, _ := page.Body.Read(body)
	if page.StatusCode != 200 || !strings.Contains(string(body[:n]), `id="usage"`) {
		t.Errorf("signed in with the dev admin token, %s shows %s:\n%.400s", dash, page.Status, body[:n])
	}
}

// checkDemoLogin drives the auth server's demo login in headless Chromium
// as the ready line says, up to the code step, and finds the code in the
// server's log (make run's --auth-dev-log-codes).
func checkDemoLogin(t *testing.T, chromium string, serve *command) {
	m := demoLineRE.FindStringSubmatch(serve.out.String())
	if m == nil {
		t.Fatalf("no demo login line in:\n%s", serve.out)
	}
	ctx, cancel := context.WithTimeout(startChromium(t, chromium), 2*time.Minute)
	defer cancel()
	const email = "readme@example.com"
	if err := chromedp.Run(ctx, chromedp.Navigate(m[1]+"/"), chromedp.WaitVisible("#demo-login", chromedp.ByID),
		chromedp.Click("#demo-login", chromedp.ByID), chromedp.WaitVisible("#email", chromedp.ByID),
		chromedp.SendKeys("#email", email, chromedp.ByID), chromedp.Click("#send", chromedp.ByID),
		chromedp.WaitVisible("#code", chromedp.ByID)); err != nil {
		t.Fatalf("the demo login, from %s/ to the code step: %v", m[1], err)
	}
	if logs := serve.errOut.String(); !strings.Contains(logs, "passwordless code for "+email) {
		t.Errorf("no code for %s in serve's log:\n%s", email, logs)
	}
}

// checkIgnored: every file or folder in dir that a README command made is
// one the repository's .gitignore ignores, as in a checkout.
func checkIgnored(t *testing.T, repo, dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, makeRunData) || name == "testdata" || name == "auth" {
			continue // the test's own, and the repository files it copied
		}
		if e.IsDir() {
			name += "/"
		}
		cmd := exec.Command("git", "-C", repo, "check-ignore", "--no-index", "-q", name)
		if err := cmd.Run(); err != nil {
			t.Errorf("a README command leaves %s in a checkout, and .gitignore does not ignore it (git check-ignore: %v)", name, err)
		}
	}
}

// TestMakeRunConfig: `make run CONFIG=…` serves that config, whose
// relative data_dir is its folder's; and SIGINT sent to make's own
// process, which GNU make does not pass on, stops portico too.
func TestMakeRunConfig(t *testing.T) {
	needTools(t, "bash", "make")
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(t.TempDir(), "conf")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := "data_dir: state\nnetworks:\n  - {name: my-evm, family: evm}\n"
	if err := os.WriteFile(filepath.Join(conf, "portico.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// The test's own SIGINT handling must not be inherited as "ignored"
	// (a background job's), or make would ignore the SIGINT too.
	if signal.Ignored(os.Interrupt) {
		c := make(chan os.Signal, 1)
		signal.Notify(c, os.Interrupt)
		defer signal.Stop(c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "run", "CONFIG="+filepath.Join(conf, "portico.yaml"), "BIN="+sharedBin(t), "GO="+goTool())
	cmd.Dir = repo
	cmd.Env = append(readerEnv(), "PORTICO_LISTEN=127.0.0.1:0")
	out := &watched{ch: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = out, out
	// A process group of its own, as a shell's job: the SIGINT below
	// goes to make's process alone.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	done := make(chan struct{})
	var werr error
	go func() { werr = <-exited; close(done) }()
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}()
	if _, err := out.waitFor(ctx, demoLineRE, done); err != nil {
		t.Fatalf("make run CONFIG=…: %v (exit %v)\n%s", err, werr, out)
	}
	text := out.String()
	if !regexp.MustCompile(`(?m)^my-evm\s+http://`).MatchString(text) {
		t.Errorf("make run did not serve the config's network:\n%s", text)
	}
	if _, err := os.Stat(filepath.Join(conf, "state", DevAdminTokenFile)); err != nil {
		t.Errorf("the config's data_dir is not beside the config: %v", err)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	<-done
	var exit *exec.ExitError
	if werr != nil && !errors.As(werr, &exit) {
		t.Fatal(werr)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if last := lines[len(lines)-1]; last != "stopped" {
		t.Fatalf("after SIGINT to make, the last line is %q, want \"stopped\":\n%s", last, out)
	}
}
