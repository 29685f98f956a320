package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/porticohq/portico/config"
)

// TestDashboardWebhooks: a webhook whose receiver always fails is paused
// after webhooks.retry_for, and the dashboard (headless Chromium) shows
// it paused with the reason; Delete removes it.
func TestDashboardWebhooks(t *testing.T) {
	chromium := chromiumBinary(t)
	dir := dashboardArtifacts(t)
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) }))
	defer down.Close()
	cfg := config.DefaultConfig()
	cfg.Admin.Token = dashToken
	cfg.Keys = []config.Key{{Name: "hooks", Key: hookKey, DailyCredits: 1e12}}
	cfg.Webhooks.AllowPrivateURLs = true
	cfg.Webhooks.RetryFor = time.Second
	cfg.Networks = []config.Network{{Name: "evm-devnet", Family: "evm", Devnet: config.Devnet{BlockPeriod: 300 * time.Millisecond}}}
	s := start(t, cfg)
	cctx := startChromium(t, chromium)
	base := "http://" + s.m.Shared
	var made struct{ ID string }
	if st := adminCall(t, base, dashToken, "POST", "/admin/v1/keys/hooks/webhooks",
		map[string]any{"network": "evm-devnet", "event": "newHeads", "url": down.URL, "secret": "receiver-secret-0123456789"}, &made); st != http.StatusCreated {
		t.Fatalf("create: %d", st)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var list []struct{ State string }
		adminCall(t, base, dashToken, "GET", "/admin/v1/webhooks", nil, &list)
		if len(list) == 1 && list[0].State == "paused" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the webhook was not paused: %+v", list)
		}
		time.Sleep(100 * time.Millisecond)
	}

	ctx, cancel := context.WithTimeout(cctx, 2*time.Minute)
	defer cancel()
	row := `#webhook-table tr[data-webhook="` + made.ID + `"]`
	var state, reason string
	err := chromedp.Run(ctx, chromedp.Navigate(base+"/dashboard/"), chromedp.WaitVisible("#token", chromedp.ByID),
		chromedp.SendKeys("#token", dashToken, chromedp.ByID), chromedp.Click("#submit", chromedp.ByID),
		chromedp.WaitVisible(row, chromedp.ByQuery),
		chromedp.Text(row+" .state", &state, chromedp.ByQuery), chromedp.Text(row+" .reason", &reason, chromedp.ByQuery),
		shot(dir, "dashboard-webhooks.png"))
	if err != nil {
		t.Fatal(err)
	}
	if state != "paused" || !strings.Contains(reason, "receiver answered 500") {
		t.Fatalf("the dashboard shows %q, %q; want paused with the receiver's answer", state, reason)
	}
	if err := chromedp.Run(ctx, chromedp.Click(row+" button.delete", chromedp.ByQuery), chromedp.WaitNotPresent(row, chromedp.ByQuery)); err != nil {
		t.Fatalf("delete: %v (screenshot %s)", err, filepath.Join(dir, "dashboard-webhooks.png"))
	}
}
