package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/porticohq/portico/config"
)

// TestDocsParamsExamples keeps the params error messages the docs show in
// step with what is answered: each example is asked again, of the gateway
// or of the devnet the page describes, and the page must show the answer's
// message exactly. Every example in docs/ must be in the table, so a new one
// gets checked too.
func TestDocsParamsExamples(t *testing.T) {
	examples := []struct {
		doc    string
		devnet bool // asked of the solana devnet directly, not through the gateway
		body   string
	}{
		{"errors.md", false, `{"jsonrpc":"2.0","id":1,"method":"getBlock","params":[1,{"encoding":"hex"}]}`},
		{"solana-devnet.md", true, `{"jsonrpc":"2.0","id":1,"method":"getBlock","params":[1,{"encoding":"hex"}]}`},
	}

	cfg := config.DefaultConfig()
	cfg.Networks = []config.Network{{Name: "solana-devnet", Family: "solana"}}
	srv := start(t, cfg)
	answered := map[string][]string{} // doc page to the messages its rows got
	for _, e := range examples {
		url := srv.url(t, "solana-devnet")
		if e.devnet {
			url = srv.m.Devnets["solana-devnet"].HTTPURL()
		}
		_, body := post(t, url, e.body)
		var resp struct {
			Error *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &resp); err != nil || resp.Error == nil || resp.Error.Code != -32602 {
			t.Fatalf("%s: want a -32602 error, got %s", e.body, body)
		}
		answered[e.doc] = append(answered[e.doc], resp.Error.Message)
	}

	// Every backquoted `invalid params: …` in docs/ that is an example (not
	// a template with <placeholders> or …) is a message a row got, and every
	// row's message is shown on its page.
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(pages) == 0 {
		t.Fatalf("docs: %v", err)
	}
	exampleRE := regexp.MustCompile("`(invalid params: [^`]*)`")
	shown := map[string]bool{}
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		page := filepath.Base(p)
		for _, m := range exampleRE.FindAllStringSubmatch(string(b), -1) {
			if strings.ContainsAny(m[1], "<…") {
				continue
			}
			shown[page+" "+m[1]] = true
			if !slices.Contains(answered[page], m[1]) {
				t.Errorf("docs/%s shows `%s`; what was answered: %q (or no row of this test asks it again)", page, m[1], answered[page])
			}
		}
	}
	for page, msgs := range answered {
		for _, msg := range msgs {
			if !shown[page+" "+msg] {
				t.Errorf("docs/%s does not show `%s`", page, msg)
			}
		}
	}
}
