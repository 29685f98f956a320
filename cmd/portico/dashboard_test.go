package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/metering/apikey"
	"github.com/porticohq/portico/store"
)

const dashToken = "dashboard-e2e-admin-token-0123456789"

// TestDashboardEndToEnd drives the dashboard of a whole portico serve in
// headless Chromium: sign in, create a key, call two networks with it at
// the URLs the dashboard shows, see the calls and credits on the chart
// and the balance table, see the nodes, change the balance, revoke the
// key and watch its next call fail, sign out. Screenshots (light, dark,
// phone) go to $PORTICO_ARTIFACTS, else testdata/artifacts.
func TestDashboardEndToEnd(t *testing.T) {
	began := time.Now()
	chromium := chromiumBinary(t)
	dir := dashboardArtifacts(t)
	_ = os.Remove(filepath.Join(dir, "dashboard-failure.png")) // from an earlier run
	cfg := config.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.Admin.Token = dashToken
	cfg.Store.KeyCacheTTL = 100 * time.Millisecond // a revoke applies within this
	cfg.Metering.FlushInterval = 200 * time.Millisecond
	// The three built-in networks, with blocks coming faster so that every
	// node shows a head soon.
	fast := config.Devnet{BlockPeriod: 500 * time.Millisecond}
	cfg.Networks = []config.Network{{Name: "solana-devnet", Family: "solana"},
		{Name: "evm-devnet", Family: "evm", Devnet: fast}, {Name: "starknet-devnet", Family: "starknet", Devnet: fast}}
	s := start(t, cfg)
	t.Cleanup(func() {
		if logs := s.logs.String(); strings.Contains(logs, dashToken) || !strings.Contains(logs, "dashboard: signed in") {
			t.Errorf("logs: the token must be absent and the sign-in logged:\n%s", logs)
		}
	})
	// Chromium starts after portico, so that it is closed first: its
	// keep-alive connections would hold up portico's shutdown.
	cctx := startChromium(t, chromium)
	seedHistory(t, s)
	for range 2 {
		if a := call(t, s.url(t, "evm-devnet"), `{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}`); a.status != 200 {
			t.Fatalf("dev key call: %d %s", a.status, a.body)
		}
	}
	todayCalls := int64(2)

	base := "http://" + s.m.Shared + "/dashboard/"
	ctx, cancel := context.WithTimeout(cctx, 3*time.Minute)
	defer cancel()
	run := func(what string, acts ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(ctx, acts...); err != nil {
			// What the page showed, for whoever reads the failure.
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			_ = chromedp.Run(sctx, shot(dir, "dashboard-failure.png"))
			t.Fatalf("%s: %v (the page: %s)", what, err, filepath.Join(dir, "dashboard-failure.png"))
		}
	}
	text := func(sel string) string {
		t.Helper()
		var v string
		run("read "+sel, chromedp.Text(sel, &v, chromedp.ByQuery))
		return v
	}

	// Sign in: a wrong token first.
	var errText string
	run("sign-in form", chromedp.Navigate(base), chromedp.WaitVisible("#token", chromedp.ByID),
		shot(dir, "dashboard-signin.png"),
		chromedp.SendKeys("#token", "not-the-token-not-the-token", chromedp.ByID), chromedp.Click("#submit", chromedp.ByID),
		chromedp.WaitVisible("#error", chromedp.ByID), chromedp.Text("#error", &errText, chromedp.ByID))
	if !strings.Contains(errText, "not the admin token") {
		t.Errorf("wrong token: %q", errText)
	}
	run("sign in", chromedp.SendKeys("#token", dashToken, chromedp.ByID), chromedp.Click("#submit", chromedp.ByID),
		chromedp.WaitVisible("#usage", chromedp.ByID), waitJS(`document.getElementById('updated').textContent.startsWith('updated')`))

	// Create a key for two of the three networks.
	run("create a key", chromedp.Click("#create summary", chromedp.ByQuery), chromedp.WaitVisible("#create-form", chromedp.ByID),
		chromedp.SendKeys(`#create-form input[name=name]`, "e2e-app", chromedp.ByQuery),
		chromedp.SendKeys(`#create-form input[name=daily]`, "5000", chromedp.ByQuery),
		chromedp.Click(`#create-networks input[value="evm-devnet"]`, chromedp.ByQuery),
		chromedp.Click(`#create-networks input[value="solana-devnet"]`, chromedp.ByQuery),
		chromedp.Click("#create-submit", chromedp.ByID), chromedp.WaitVisible("#new-key", chromedp.ByID),
		shot(dir, "dashboard-new-key.png"))
	key := text("#new-key-value")
	if err := apikey.Check(key); err != nil {
		t.Fatalf("the key shown: %q: %v", key, err)
	}
	urls := map[string]string{}
	for _, n := range []string{"evm-devnet", "solana-devnet"} {
		urls[n] = text(fmt.Sprintf(`#endpoints tr[data-network=%q] td:nth-child(2) code`, n))
		ws := text(fmt.Sprintf(`#endpoints tr[data-network=%q] td:nth-child(3) code`, n))
		// The URLs are the ones the ready lines print, with the new key.
		if want := "http://" + s.addr(t, n) + "/v3/" + key; urls[n] != want {
			t.Errorf("%s HTTP URL %q, want %q", n, urls[n], want)
		}
		if want := "ws://" + s.addr(t, n) + "/ws/v3/" + key; ws != want {
			t.Errorf("%s WebSocket URL %q, want %q", n, ws, want)
		}
	}
	var starknetShown bool
	run("endpoints", chromedp.Evaluate(`!!document.querySelector('#endpoints tr[data-network="starknet-devnet"]')`, &starknetShown))
	if starknetShown {
		t.Error("the key is not allowed on starknet-devnet, but its URL is shown")
	}
	run("hide the key", chromedp.Click("#new-key-done", chromedp.ByID), chromedp.WaitNotVisible("#new-key", chromedp.ByID))

	// Calls with the new key, at the URLs the dashboard showed.
	var calls, credits int64
	for _, c := range []struct{ network, body string }{
		{"evm-devnet", `{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}`},
		{"evm-devnet", `{"jsonrpc":"2.0","id":2,"method":"eth_blockNumber"}`},
		{"evm-devnet", `{"jsonrpc":"2.0","id":3,"method":"eth_chainId"}`},
		{"solana-devnet", `{"jsonrpc":"2.0","id":4,"method":"getSlot"}`},
		{"solana-devnet", `{"jsonrpc":"2.0","id":5,"method":"getSlot"}`},
	} {
		a := call(t, urls[c.network], c.body)
		if a.status != 200 || !a.haveCreditHeader || strings.Contains(a.body, `"error"`) {
			t.Fatalf("%s %s: %d %s", c.network, c.body, a.status, a.body)
		}
		calls, credits = calls+1, credits+a.used
	}
	todayCalls += calls

	// The calls reach the chart and the balance table (usage is flushed
	// every 200ms; the test presses Refresh until they show in both, which
	// are read one after the other and may be a flush apart).
	row := `#balances tr[data-key="e2e-app"]`
	run("usage shows the calls", waitJS(fmt.Sprintf(`(() => {
		const c = document.querySelector('%s td.calls');
		const bar = document.querySelector('#chart g.day:last-of-type');
		if (c && c.textContent === '%d' && bar && bar.dataset.total === '%d') return true;
		if (document.querySelector('main').getAttribute('aria-busy') !== 'true') document.getElementById('refresh').click();
		return false;
	})()`, row, calls, todayCalls)))
	checks := []struct{ what, expr, want string }{
		{"credits today, e2e-app", `document.querySelector('` + row + ` td.credits').textContent`, fmtInt(credits)},
		{"remaining today, e2e-app", `document.querySelector('` + row + ` td.remaining').textContent`, fmtInt(5000 - credits)},
		{"calls today, all keys", `document.getElementById('today-calls').dataset.value`, fmt.Sprint(todayCalls)},
		{"today's bar", `document.querySelector('#chart g.day:last-of-type').dataset.total`, fmt.Sprint(todayCalls)},
		{"today's eth_blockNumber", `document.querySelector('#chart g.day:last-of-type rect[data-series="eth_blockNumber"]').dataset.value`, "2"},
		{"today's getSlot", `document.querySelector('#chart g.day:last-of-type rect[data-series="getSlot"]').dataset.value`, "2"},
		{"a month of bars", `String(document.querySelectorAll('#chart g.day').length)`, "30"},
	}
	for _, c := range checks {
		var got string
		run(c.what, chromedp.Evaluate(c.expr, &got))
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.what, got, c.want)
		}
	}
	// By key, in credits: today's bar holds e2e-app's credits.
	var keyCredits string
	run("by key, credits", chromedp.Click(`button[data-group="key"]`, chromedp.ByQuery), chromedp.Click(`button[data-metric="credits"]`, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector('#chart g.day:last-of-type rect[data-series="e2e-app"]').dataset.value`, &keyCredits))
	if keyCredits != fmt.Sprint(credits) {
		t.Errorf("today's credits of e2e-app on the chart: %s, want %d", keyCredits, credits)
	}
	run("by method, calls", chromedp.Click(`button[data-group="method"]`, chromedp.ByQuery), chromedp.Click(`button[data-metric="calls"]`, chromedp.ByQuery))

	// Nodes: each network's embedded devnet, with its head once the
	// devnet has made a block.
	for _, n := range []string{"solana-devnet", "evm-devnet", "starknet-devnet"} {
		run("nodes of "+n, waitJS(fmt.Sprintf(`(() => {
			const h = document.querySelector('#networks [data-network=%q] tr[data-node] td.head');
			if (h && /^[1-9][0-9,]*$/.test(h.textContent)) return true;
			document.getElementById('refresh').click();
			return false;
		})()`, n)))
	}
	if node := text(`#networks [data-network="evm-devnet"] tr[data-node] td:first-child`); node != "evm-devnet/embedded" {
		t.Errorf("evm-devnet's node: %q", node)
	}
	// What the node keeps and its own rate (docs/nodes.md): an embedded
	// devnet's config says nothing, and it has answered no error.
	for cell, want := range map[string]string{"keeps": "state: not known", "rate": "no bound", "answers": "results only"} {
		if got := text(`#networks [data-network="evm-devnet"] tr[data-node] td.` + cell); got != want {
			t.Errorf("evm-devnet's node %s: %q, want %q", cell, got, want)
		}
	}
	// Each network's heads as its family names them: "safe" only where
	// the family has a safe head.
	for n, want := range map[string]string{
		"evm-devnet":      `^latest [0-9,]+ · safe [0-9,]+ · finalized [0-9,]+ · max lag 10$`,
		"solana-devnet":   `^processed [0-9,]+ · confirmed [0-9,]+ · finalized [0-9,]+ · max lag 50$`,
		"starknet-devnet": `^latest [0-9,]+ · l1_accepted [0-9,]+ · max lag 5$`,
	} {
		if got := text(fmt.Sprintf(`#networks [data-network=%q] p.heads`, n)); !regexp.MustCompile(want).MatchString(got) {
			t.Errorf("%s heads: %q, want %s", n, got, want)
		}
	}
	// The calls answered from heads (eth_blockNumber, getSlot) have a row
	// of their own with the count the gateway keeps; no more calls are
	// made until it is read.
	for _, n := range []string{"evm-devnet", "solana-devnet"} {
		want := fmtInt(int64(s.m.FromHeads(n)))
		run("calls answered from heads, "+n, waitJS(fmt.Sprintf(`(() => {
			const c = document.querySelector('#networks [data-network=%q] tr.from-heads td.calls');
			if (c && c.textContent === %q) return true;
			if (document.querySelector('main').getAttribute('aria-busy') !== 'true') document.getElementById('refresh').click();
			return false;
		})()`, n, want)))
		if want == "0" {
			t.Errorf("%s: no call was answered from heads", n)
		}
	}
	// The nav's anchors scroll a section's heading clear of the sticky
	// header, at a desktop's width and at a phone's.
	anchors := func(what string) {
		t.Helper()
		for _, id := range []string{"keys", "nodes", "usage"} {
			var clear bool
			run(what+": #"+id, chromedp.Click(`header.top nav a[href="#`+id+`"]`, chromedp.ByQuery),
				chromedp.Evaluate(`document.querySelector('#`+id+` h2').getBoundingClientRect().top >= document.querySelector('header.top').getBoundingClientRect().bottom`, &clear))
			if !clear {
				t.Errorf("%s: the link to #%s leaves its heading under the header", what, id)
			}
		}
	}
	anchors("desktop")
	run("phone width", emulation.SetDeviceMetricsOverride(390, 844, 1, true))
	anchors("phone")
	run("desktop width", emulation.ClearDeviceMetricsOverride(), chromedp.Evaluate(`window.scrollTo(0, 0)`, nil))

	// Screenshots: light, dark, and a phone's width.
	var bg string
	var overflow bool
	run("screenshots", shot(dir, "dashboard-light.png"),
		emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}),
		chromedp.Evaluate(`getComputedStyle(document.body).backgroundColor`, &bg), shot(dir, "dashboard-dark.png"),
		emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "light"}}),
		emulation.SetDeviceMetricsOverride(390, 844, 2, true), chromedp.Click("#refresh", chromedp.ByID), chromedp.Sleep(500*time.Millisecond),
		chromedp.Evaluate(`document.documentElement.scrollWidth > 390`, &overflow), viewShot(dir, "dashboard-phone.png"),
		emulation.SetDeviceMetricsOverride(390, 844, 1, true), shot(dir, "dashboard-phone-full.png"),
		emulation.ClearDeviceMetricsOverride(), chromedp.Click("#refresh", chromedp.ByID))
	if bg != "rgb(15, 17, 21)" {
		t.Errorf("dark mode: background %s, want the dark theme's", bg)
	}
	if overflow {
		t.Error("the dashboard is wider than a 390px phone")
	}

	// Change the balance; the gateway applies it within the key cache TTL.
	// Row actions wait for a refresh in flight, which may redraw the row.
	idle := waitJS(`document.querySelector('main').getAttribute('aria-busy') === 'false'`)
	run("change balance", idle, chromedp.Click(`#key-table tr[data-key="e2e-app"] button.edit`, chromedp.ByQuery),
		chromedp.SetValue(`#key-table tr[data-key="e2e-app"] input[name=daily]`, "100000", chromedp.ByQuery),
		chromedp.Click(`#key-table tr[data-key="e2e-app"] button[type=submit]`, chromedp.ByQuery),
		waitJS(`document.querySelector('#key-table tr[data-key="e2e-app"] td.daily')?.textContent === '100,000'`))
	deadline := time.Now().Add(5 * time.Second)
	for {
		a := call(t, urls["evm-devnet"], `{"jsonrpc":"2.0","id":6,"method":"eth_blockNumber"}`)
		if a.status != 200 {
			t.Fatalf("call after the balance change: %d %s", a.status, a.body)
		}
		credits += a.used
		if a.remaining > 5000 {
			if a.remaining != 100000-credits {
				t.Errorf("remaining after the balance change: %d, want %d", a.remaining, 100000-credits)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new balance did not apply: remaining %d", a.remaining)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Revoke: the row goes, and the key's next call fails.
	run("revoke", idle, chromedp.Click(`#key-table tr[data-key="e2e-app"] button.revoke`, chromedp.ByQuery),
		chromedp.WaitVisible(`#key-table tr[data-key="e2e-app"] button.revoke.danger`, chromedp.ByQuery),
		chromedp.Click(`#key-table tr[data-key="e2e-app"] button.revoke`, chromedp.ByQuery),
		waitJS(`!document.querySelector('#key-table tr[data-key="e2e-app"]')`))
	var revoked answer
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if revoked = call(t, urls["evm-devnet"], `{"jsonrpc":"2.0","id":7,"method":"eth_blockNumber"}`); revoked.status != 200 || time.Now().After(deadline) {
			break
		}
	}
	if revoked.status != 401 || !strings.Contains(revoked.body, "-32040") {
		t.Errorf("a call with the revoked key: %d %s, want 401 and -32040", revoked.status, revoked.body)
	}

	// A key with a secret and a contract allowlist: the secret is shown
	// once, with a copy button; Settings edits the key's lists and bounds
	// and rotates its secret, shown once too (docs/keys.md).
	run("create a key with a secret", idle, chromedp.Click("#create summary", chromedp.ByQuery), chromedp.WaitVisible("#create-form", chromedp.ByID),
		chromedp.SendKeys(`#create-form input[name=name]`, "e2e-sealed", chromedp.ByQuery),
		chromedp.Click(`#create-form input[name=secret]`, chromedp.ByQuery),
		chromedp.SendKeys(`#create-form input[name=addresses]`, "0x00000000000000000000000000000000000000aa", chromedp.ByQuery),
		chromedp.Click("#create-submit", chromedp.ByID), chromedp.WaitVisible("#new-key-secret", chromedp.ByID))
	sealed, secret := text("#new-key-value"), text("#new-key-secret-value")
	var copyable bool
	run("the secret's copy button", chromedp.Evaluate(`!!document.querySelector('#new-key-secret button.copy[data-copy="#new-key-secret-value"]')`, &copyable))
	if len(secret) != apikey.SecretLength || !copyable {
		t.Fatalf("the secret shown: %q, copy button %v", secret, copyable)
	}
	run("hide the key and secret", chromedp.Click("#new-key-done", chromedp.ByID), chromedp.WaitNotVisible("#new-key", chromedp.ByID))
	sealedURL := "http://" + s.addr(t, "evm-devnet") + "/v3/" + sealed
	withSecret := func(sec string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, sealedURL, strings.NewReader(`{"jsonrpc":"2.0","id":8,"method":"eth_chainId"}`))
		req.Header.Set("Content-Type", "application/json")
		req.SetBasicAuth("", sec)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if a := call(t, sealedURL, `{"jsonrpc":"2.0","id":8,"method":"eth_chainId"}`); a.status != 401 || !strings.Contains(a.body, "secret_missing") {
		t.Errorf("without the secret: %d %s", a.status, a.body)
	}
	if status, body := withSecret(secret); status != 200 {
		t.Errorf("with the secret: %d %s", status, body)
	}
	sealedRow := `#key-table tr[data-key="e2e-sealed"]`
	run("settings", idle, chromedp.Click(sealedRow+` button.settings`, chromedp.ByQuery), chromedp.WaitVisible(sealedRow+` form.rules`, chromedp.ByQuery),
		chromedp.SetValue(sealedRow+` form.rules input[name=rps]`, "50", chromedp.ByQuery),
		chromedp.SetValue(sealedRow+` form.rules input[name=agents]`, "Go-http-client", chromedp.ByQuery),
		chromedp.Click(sealedRow+` form.rules button[type=submit]`, chromedp.ByQuery),
		waitJS(`(document.querySelector('`+sealedRow+` .guards')?.textContent || '').includes('50 calls/s')`))
	if got := text(sealedRow + ` td.allows span`); !strings.Contains(got, "contracts: 0x00000000000000000000000000000000000000aa") || !strings.Contains(got, "user agents: Go-http-client") {
		t.Errorf("the key's lists after Settings: %q", got)
	}
	run("rotate the secret", idle, chromedp.Click(sealedRow+` button.settings`, chromedp.ByQuery), chromedp.WaitVisible(sealedRow+` form.rules`, chromedp.ByQuery),
		chromedp.Click(sealedRow+` form.rules button.rotate`, chromedp.ByQuery), chromedp.WaitVisible("#new-secret", chromedp.ByID))
	rotated := text("#new-secret-value")
	if len(rotated) != apikey.SecretLength || rotated == secret || !strings.Contains(text("#new-secret-grace"), "keeps working until") {
		t.Errorf("the rotated secret shown: %q, grace %q", rotated, text("#new-secret-grace"))
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		status, body := withSecret(rotated)
		if status == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the rotated secret did not apply: %d %s", status, body)
		}
	}
	if status, body := withSecret(secret); status != 200 {
		t.Errorf("the old secret within its grace period: %d %s", status, body)
	}
	run("hide the secret", chromedp.Click("#new-secret-done", chromedp.ByID), chromedp.WaitNotVisible("#new-secret", chromedp.ByID))

	// Sign out: back to the form, and the dashboard is gone until the next
	// sign-in.
	var signedOut bool
	run("sign out", chromedp.Click("#signout button", chromedp.ByQuery), chromedp.WaitVisible("#token", chromedp.ByID),
		chromedp.Navigate(base), chromedp.WaitVisible("#token", chromedp.ByID),
		chromedp.Evaluate(`!document.getElementById('usage')`, &signedOut))
	if !signedOut {
		t.Error("the dashboard shows after sign-out")
	}
	for _, f := range []string{"dashboard-signin.png", "dashboard-new-key.png", "dashboard-light.png", "dashboard-dark.png", "dashboard-phone.png", "dashboard-phone-full.png"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() < 5000 {
			t.Errorf("screenshot %s: %v", f, err)
		}
	}
	t.Logf("dashboard end to end in %v; screenshots in %s", time.Since(began).Round(time.Millisecond), dir)
}

// seedHistory writes four weeks of usage before today for the dev key
// and a second key, so that the charts show a month as they would on a
// gateway in use.
func seedHistory(t *testing.T, s *started) {
	t.Helper()
	ctx := context.Background()
	dev, err := s.m.Store.Get(ctx, "dev")
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := s.m.Store.Create(ctx, store.KeySpec{Name: "analytics", DailyCredits: 2_000_000})
	if err != nil {
		t.Fatal(err)
	}
	methods := []struct {
		name string
		cost int64
	}{{"eth_getProof", 150}, {"getBlock", 160}, {"starknet_getEvents", 200}, {"eth_call", 80}}
	var rows []store.Usage
	for i := 1; i < 30; i++ {
		day := time.Now().UTC().AddDate(0, 0, -i).Format(time.DateOnly)
		for j, m := range methods {
			for k, id := range []int64{dev.ID, other.ID} {
				n := int64(20 + (i*37+j*11+k*5)%60 + (30-i)*2)
				if k == 1 && j%2 == 1 {
					continue
				}
				rows = append(rows, store.Usage{Day: day, KeyID: id, Method: m.name, Calls: n, Credits: n * m.cost})
			}
		}
	}
	if err := s.m.Store.AddUsage(ctx, rows, "", 0); err != nil {
		t.Fatal(err)
	}
}

// fmtInt writes n as the dashboard does, with thousands separators.
func fmtInt(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// waitJS waits until expr, evaluated every 250ms, is true.
func waitJS(expr string) chromedp.Action {
	var ok bool
	return chromedp.Poll(expr, &ok, chromedp.WithPollingInterval(250*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second))
}

// shot saves a screenshot of the whole page as dir/name.
func shot(dir, name string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		var png []byte
		if err := chromedp.FullScreenshot(&png, 100).Do(ctx); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, name), png, 0o644)
	})
}

// viewShot saves a screenshot of what the window shows as dir/name.
func viewShot(dir, name string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		var png []byte
		if err := chromedp.CaptureScreenshot(&png).Do(ctx); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, name), png, 0o644)
	})
}

// chromiumBinary finds Chromium: $PORTICO_CHROMIUM, /usr/bin/chromium
// (scripts/install-chromium.sh) or chromium on $PATH. Without one the
// test is skipped, or fails under PORTICO_TEST_STRICT=1.
func chromiumBinary(t *testing.T) string {
	t.Helper()
	path := ""
	for _, p := range []string{os.Getenv("PORTICO_CHROMIUM"), "/usr/bin/chromium"} {
		if _, err := os.Stat(p); p != "" && err == nil {
			path = p
			break
		}
	}
	if path == "" {
		if p, err := exec.LookPath("chromium"); err == nil {
			path = p
		}
	}
	if path == "" {
		msg := "Chromium not found (run scripts/install-chromium.sh, or set PORTICO_CHROMIUM)"
		if strict() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return path
}

// startChromium starts a headless Chromium with a fresh profile.
func startChromium(t *testing.T, path string) context.Context {
	t.Helper()
	profile, err := os.MkdirTemp("", "portico-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile), chromedp.WindowSize(1280, 900))
	ctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelB()
		cancelA()
		// Chromium's helpers may still write to the profile for a moment.
		for range 50 {
			if os.RemoveAll(profile) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// dashboardArtifacts is where screenshots go: $PORTICO_ARTIFACTS, else
// testdata/artifacts (ignored by git).
func dashboardArtifacts(t *testing.T) string {
	dir := os.Getenv("PORTICO_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("testdata", "artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The dashboard is on the shared listener only with an admin token, and
// only under /dashboard/; the networks' own listeners never serve it.
func TestDashboardRouting(t *testing.T) {
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, withToken := range []bool{false, true} {
		cfg := config.DefaultConfig()
		cfg.Networks = []config.Network{{Name: "evm", Family: "evm", Devnet: config.Devnet{Disabled: true}}}
		if withToken {
			cfg.Admin.Token = dashToken
		}
		s := start(t, cfg)
		shared := "http://" + s.m.Shared
		cases := []struct {
			url  string
			code int
			has  string
		}{
			{shared + "/dashboard/", map[bool]int{false: 404, true: 200}[withToken], map[bool]string{false: "404", true: `action="signin"`}[withToken]},
			{shared + "/dashboard", map[bool]int{false: 404, true: 301}[withToken], ""},
			{shared + "/dashboard/static/app.css", map[bool]int{false: 404, true: 200}[withToken], ""},
			{shared + "/dashboards", 404, "404 page not found"},
			{"http://" + s.addr(t, "evm") + "/dashboard/", 404, ""},
		}
		for _, c := range cases {
			resp, err := noRedirect.Get(c.url)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.code || !strings.Contains(string(b), c.has) {
				t.Errorf("admin token %v, GET %s: %d %.80q; want %d and %q", withToken, c.url, resp.StatusCode, b, c.code, c.has)
			}
		}
	}
}
