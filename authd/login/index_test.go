package login

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// The front page names what the server offers, and its links work.
func TestIndexPage(t *testing.T) {
	e := newEnv(t)
	front := httptest.NewServer(e.Handler.IndexHandler(Index{SessionServer: "/", Health: "/healthz"}))
	t.Cleanup(front.Close)
	cases := []struct {
		name  string
		query string
		want  []string
	}{
		{"default language", "", []string{`<html lang="en"`, "<h1>Auth server</h1>",
			`<code>production</code></td><td><code>` + e.URL + `</code>`,
			`<code>staging</code></td><td><code>` + e.URL + `/staging</code>`, `<code>testing</code>`,
			"<code>POST /store/set</code>", "<code>GET /store/get?key=…&amp;namespace=</code>",
			"<code>sapphire_devnet</code></td><td>5</td><td>3</td>", "<code>sapphire_mainnet</code>",
			"<code>google</code> (verifier <code>test-google</code>)", "<code>jwt</code> (verifier <code>" + jwtVerifier + "</code>)",
			"<code>email_passwordless</code> (verifier <code>portico-passwordless</code>)<p class=\"dev\">",
			`id="jwks" href="` + e.URL + `/jwks.json"`, `id="health" href="/healthz"`, `hreflang="de"`}},
		{"?lang=de", "?lang=de", []string{`<html lang="de"`, "<h1>Auth-Server</h1>", "Schlüsselnetzwerke"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, err := http.Get(front.URL + "/" + c.query)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || resp.Header.Get("Content-Security-Policy") == "" {
				t.Fatalf("%s %v", resp.Status, resp.Header)
			}
			for _, w := range c.want {
				if !strings.Contains(string(body), w) {
					t.Errorf("page lacks %q:\n%s", w, body)
				}
			}
		})
	}
	// The page's links answer: the passwordless key set (the health check
	// is the auth server's). It links to no start page: one opened without
	// a login has nothing to start. Without Index.Demo it offers no demo.
	resp, _ := http.Get(front.URL)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), "/start") || strings.Contains(string(body), `id="demo"`) {
		t.Errorf("the page links to a start page or offers a demo:\n%s", body)
	}
	links := regexp.MustCompile(`href="(http[^"]+)"`).FindAllStringSubmatch(string(body), -1)
	if len(links) != 1 {
		t.Fatalf("want 1 absolute link (jwks.json), got %q", links)
	}
	for _, l := range links {
		resp, err := http.Get(l[1])
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s: %s", l[1], resp.Status)
		}
	}
}
