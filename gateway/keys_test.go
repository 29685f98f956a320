package gateway_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/evm"
	"github.com/porticohq/portico/metering/apikey"
	"github.com/porticohq/portico/store"
)

// evmTable is a table with the EVM methods a contract-address allowlist
// reads, forwarded as they come, with the family's statements of where
// their params name contracts.
func evmTable() portico.Table {
	return portico.Table{
		Family:      "evm",
		DefaultCost: 10,
		DefaultAllow: []string{"eth_call", "eth_estimateGas", "eth_createAccessList", "eth_getLogs", "eth_getBalance", "eth_getCode", "eth_getStorageAt",
			"eth_simulateV1", "eth_getStorageValues", "eth_blockNumber", "eth_chainId"},
		Contracts: evm.Contracts(),
	}
}

// keysEnv is a gateway whose keys come from a real key store (SQLite in
// memory), so that each test sets keys up as an operator would. Settings
// apply at once: its authenticator keeps nothing.
type keysEnv struct {
	*env
	st *store.Store
}

func newKeysEnv(t *testing.T, o options) *keysEnv {
	t.Helper()
	return newKeysEnvTTL(t, o, time.Nanosecond)
}

// newKeysEnvTTL is newKeysEnv with the authenticator keeping accepted
// keys for ttl, as a server does.
func newKeysEnvTTL(t *testing.T, o options, ttl time.Duration) *keysEnv {
	t.Helper()
	st, err := store.OpenSQLite(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	o.auth = store.NewAuthenticator(st, ttl)
	if o.table == nil {
		o.table = evmTable
	}
	return &keysEnv{env: newEnv(t, o), st: st}
}

func (e *keysEnv) create(t *testing.T, spec store.KeySpec) (store.Key, string) {
	t.Helper()
	if spec.DailyCredits == 0 {
		spec.DailyCredits = 1_000_000
	}
	k, key, err := e.st.Create(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	return k, key
}

// call posts body to /v3/key with the headers given as name, value pairs.
func (e *keysEnv) call(t *testing.T, key, body string, headers ...string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/v3/"+key, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

const chainID = `{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}`

// TestKeySecret: a key with a secret takes it as the password of HTTP
// Basic auth (any user) or in X-Portico-Secret, over HTTP and in the
// WebSocket handshake; without it or with a wrong one the answer is 401
// and says which; a rotation keeps the old secret for its grace period.
func TestKeySecret(t *testing.T) {
	e := newKeysEnv(t, options{})
	k, key := e.create(t, store.KeySpec{Name: "locked", WithSecret: true})
	secret := k.NewSecret
	if len(secret) != apikey.SecretLength {
		t.Fatalf("secret %q", secret)
	}
	tests := []struct {
		name    string
		headers []string
		status  int
		want    string
	}{
		{"none", nil, 401, `"reason":"secret_missing"`},
		{"wrong basic", []string{"Authorization", basic("", "not-the-secret")}, 401, `"reason":"secret_wrong"`},
		{"wrong header", []string{portico.HeaderKeySecret, secret + "x"}, 401, `"reason":"secret_wrong"`},
		{"basic without a colon", []string{"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte(secret))}, 401, `"reason":"secret_missing"`},
		{"basic", []string{"Authorization", basic("anyone", secret)}, 200, `"result"`},
		{"basic, no user", []string{"Authorization", basic("", secret)}, 200, `"result"`},
		{"header", []string{portico.HeaderKeySecret, secret}, 200, `"result"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body, _ := e.call(t, key, chainID, tc.headers...)
			if status != tc.status || !strings.Contains(body, tc.want) {
				t.Fatalf("got %d %s, want %d with %s", status, body, tc.status, tc.want)
			}
			if status == 401 && (!strings.Contains(body, "-32040") || strings.Contains(body, "key unknown")) {
				t.Errorf("401 body %s", body)
			}
		})
	}
	// The same key without a secret set works with nothing else.
	_, plain := e.create(t, store.KeySpec{Name: "plain"})
	if status, body, _ := e.call(t, plain, chainID); status != 200 {
		t.Fatalf("plain key: %d %s", status, body)
	}

	t.Run("websocket handshake", func(t *testing.T) {
		url := "ws" + strings.TrimPrefix(e.srv.URL, "http") + "/ws/v3/" + key
		_, resp, err := websocket.Dial(ctxT(t), url, nil)
		if err == nil || resp == nil || resp.StatusCode != 401 {
			t.Fatalf("no secret: %v %v", err, resp)
		}
		b, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(b), "secret_missing") {
			t.Errorf("no secret: %s", b)
		}
		h := http.Header{"Authorization": {basic("", "wrong")}}
		if _, resp, err = websocket.Dial(ctxT(t), url, &websocket.DialOptions{HTTPHeader: h}); err == nil || resp.StatusCode != 401 {
			t.Fatalf("wrong secret: %v", err)
		}
		h = http.Header{"Authorization": {basic("", secret)}}
		c, _, err := websocket.Dial(ctxT(t), url, &websocket.DialOptions{HTTPHeader: h})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		if err := c.Write(ctxT(t), websocket.MessageText, []byte(chainID)); err != nil {
			t.Fatal(err)
		}
		if _, got, err := c.Read(ctxT(t)); err != nil || !strings.Contains(string(got), `"result"`) {
			t.Fatalf("%s %v", got, err)
		}
	})

	t.Run("rotation", func(t *testing.T) {
		_, second, err := e.st.RotateSecret(context.Background(), "locked", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{secret, second} {
			if status, body, _ := e.call(t, key, chainID, portico.HeaderKeySecret, s); status != 200 {
				t.Errorf("within the grace period: %d %s", status, body)
			}
		}
		// A rotation without grace (a leak) stops every older secret.
		_, third, err := e.st.RotateSecret(context.Background(), "locked", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{secret, second} {
			if status, body, _ := e.call(t, key, chainID, portico.HeaderKeySecret, s); status != 401 || !strings.Contains(body, "secret_wrong") {
				t.Errorf("rotated out: %d %s", status, body)
			}
		}
		if status, body, _ := e.call(t, key, chainID, portico.HeaderKeySecret, third); status != 200 {
			t.Errorf("new secret: %d %s", status, body)
		}
		if _, err := e.st.RemoveSecret(context.Background(), "locked"); err != nil {
			t.Fatal(err)
		}
		if status, body, _ := e.call(t, key, chainID); status != 200 {
			t.Errorf("secret removed: %d %s", status, body)
		}
	})
	for _, s := range []string{secret, key} {
		if strings.Contains(e.logs.String(), s) {
			t.Errorf("a secret reached the log")
		}
	}
}

// jwtSigner is one of a key's registered public keys with its private
// half, to sign test tokens.
type jwtSigner struct {
	name string
	alg  jose.SignatureAlgorithm
	priv any
	pem  string
}

func newSigner(t *testing.T, name string, alg jose.SignatureAlgorithm) jwtSigner {
	t.Helper()
	var priv, pub any
	switch alg {
	case jose.RS256:
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		priv, pub = k, &k.PublicKey
	default:
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		priv, pub = k, &k.PublicKey
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return jwtSigner{name: name, alg: alg, priv: priv, pem: string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))}
}

func sign(t *testing.T, alg jose.SignatureAlgorithm, key any, kid string, claims any) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (s jwtSigner) token(t *testing.T, c jwt.Claims) string { return sign(t, s.alg, s.priv, s.name, c) }

// TestKeyJWT: a key that requires a JWT takes tokens signed by its
// registered keys (RS256 and ES256) for its audience, within exp, nbf and
// the max lifetime, and refuses each fault with a message that says
// which.
func TestKeyJWT(t *testing.T) {
	e := newKeysEnv(t, options{})
	rs, es := newSigner(t, "ops-rsa", jose.RS256), newSigner(t, "ops-ec", jose.ES256)
	stranger := newSigner(t, "ops-rsa", jose.RS256) // same kid, another key
	_, key := e.create(t, store.KeySpec{Name: "dapp", Rules: store.Rules{
		JWTKeys:        []apikey.JWTKey{{Name: rs.name, PEM: rs.pem}, {Name: es.name, PEM: es.pem}},
		JWTMaxLifetime: 10 * time.Minute,
	}})
	now := time.Now()
	good := func() jwt.Claims {
		return jwt.Claims{Subject: "user-1", Audience: jwt.Audience{"dapp"}, Expiry: jwt.NewNumericDate(now.Add(5 * time.Minute)), IssuedAt: jwt.NewNumericDate(now)}
	}
	with := func(f func(*jwt.Claims)) jwt.Claims { c := good(); f(&c); return c }
	enc := func(v string) string { return base64.RawURLEncoding.EncodeToString([]byte(v)) }
	claimsJSON := `{"aud":"dapp","exp":` + strconv.FormatInt(now.Add(time.Minute).Unix(), 10) + `}`

	tests := []struct {
		name  string
		token string
		want  string // in the message; "" for a pass
	}{
		{"RS256", rs.token(t, good()), ""},
		{"ES256", es.token(t, good()), ""},
		{"skew tolerated", rs.token(t, with(func(c *jwt.Claims) { c.NotBefore = jwt.NewNumericDate(now.Add(30 * time.Second)) })), ""},
		{"missing", "", "token missing"},
		{"malformed", "not.a.jwt", "token malformed"},
		{"alg none", enc(`{"alg":"none","kid":"ops-rsa"}`) + "." + enc(claimsJSON) + ".", `alg \"none\"`},
		{"HS256 with the public key as secret", sign(t, jose.HS256, []byte(rs.pem), rs.name, good()), `alg \"HS256\" is not accepted`},
		{"alg of the other key", sign(t, jose.ES256, es.priv, rs.name, good()), "does not fit public key"},
		{"expired", rs.token(t, with(func(c *jwt.Claims) {
			c.IssuedAt = jwt.NewNumericDate(now.Add(-9 * time.Minute))
			c.Expiry = jwt.NewNumericDate(now.Add(-2 * time.Minute))
		})), "token expired"},
		{"future nbf", rs.token(t, with(func(c *jwt.Claims) { c.NotBefore = jwt.NewNumericDate(now.Add(3 * time.Minute)) })), "not valid yet"},
		{"wrong aud", rs.token(t, with(func(c *jwt.Claims) { c.Audience = jwt.Audience{"another-key"} })), "aud does not name this API key"},
		{"no aud", rs.token(t, with(func(c *jwt.Claims) { c.Audience = nil })), "aud does not name this API key"},
		{"unknown kid", sign(t, jose.RS256, rs.priv, "nobody", good()), `kid \"nobody\" names no public key`},
		{"wrong key", stranger.token(t, good()), "signature does not verify"},
		{"no exp", rs.token(t, with(func(c *jwt.Claims) { c.Expiry = nil })), "exp missing"},
		{"lifetime too long", rs.token(t, with(func(c *jwt.Claims) { c.Expiry = jwt.NewNumericDate(now.Add(2 * time.Hour)) })), "lifetime too long"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h []string
			if tc.token != "" {
				h = []string{"Authorization", "Bearer " + tc.token}
			}
			// Twice: the second check may come from the cache of tokens
			// that passed, and must answer the same.
			for range 2 {
				status, body, _ := e.call(t, key, chainID, h...)
				if tc.want == "" {
					if status != 200 || !strings.Contains(body, `"result"`) {
						t.Fatalf("got %d %s", status, body)
					}
					continue
				}
				if status != 401 || !strings.Contains(body, `"reason":"jwt"`) || !strings.Contains(body, tc.want) {
					t.Fatalf("got %d %s, want 401 with %s", status, body, tc.want)
				}
			}
		})
	}

	t.Run("configured audience", func(t *testing.T) {
		aud := "https://rpc.example.com"
		_, key := e.create(t, store.KeySpec{Name: "aud", Rules: store.Rules{JWTKeys: []apikey.JWTKey{{Name: es.name, PEM: es.pem}}, JWTAudience: aud}})
		if status, body, _ := e.call(t, key, chainID, "Authorization", "Bearer "+es.token(t, good())); status != 401 {
			t.Errorf("the key's name when an audience is set: %d %s", status, body)
		}
		tok := es.token(t, with(func(c *jwt.Claims) { c.Audience = jwt.Audience{aud} }))
		if status, body, _ := e.call(t, key, chainID, "Authorization", "Bearer "+tok); status != 200 {
			t.Errorf("configured audience: %d %s", status, body)
		}
	})

	t.Run("secret and JWT", func(t *testing.T) {
		k, key := e.create(t, store.KeySpec{Name: "both", WithSecret: true, Rules: store.Rules{JWTKeys: []apikey.JWTKey{{Name: es.name, PEM: es.pem}}}})
		tok := es.token(t, with(func(c *jwt.Claims) { c.Audience = jwt.Audience{"both"} }))
		if status, body, _ := e.call(t, key, chainID, "Authorization", "Bearer "+tok); status != 401 || !strings.Contains(body, "secret_missing") {
			t.Errorf("JWT without the secret: %d %s", status, body)
		}
		if status, body, _ := e.call(t, key, chainID, "Authorization", "Bearer "+tok, portico.HeaderKeySecret, k.NewSecret); status != 200 {
			t.Errorf("both: %d %s", status, body)
		}
	})

	t.Run("settings checked when stored", func(t *testing.T) {
		for name, r := range map[string]store.Rules{
			"private key": {JWTKeys: []apikey.JWTKey{{Name: "k", PEM: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"}}},
			"four keys":   {JWTKeys: []apikey.JWTKey{{Name: "a", PEM: rs.pem}, {Name: "b", PEM: es.pem}, {Name: "c", PEM: rs.pem}, {Name: "d", PEM: es.pem}}},
			"same name":   {JWTKeys: []apikey.JWTKey{{Name: "a", PEM: rs.pem}, {Name: "a", PEM: es.pem}}},
			"lifetime":    {JWTKeys: []apikey.JWTKey{{Name: "a", PEM: rs.pem}}, JWTMaxLifetime: 48 * time.Hour},
		} {
			if _, _, err := e.st.Create(context.Background(), store.KeySpec{Name: "bad", DailyCredits: 1, Rules: r}); err == nil {
				t.Errorf("%s: stored", name)
			}
		}
	})
}

var (
	allowedA = "0x1111111111111111111111111111111111111111"
	allowedB = "0x2222222222222222222222222222222222222222"
	other    = "0x3333333333333333333333333333333333333333"
)

func ethCall(id int, to string) string {
	return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"eth_call","params":[{"to":"` + to + `","data":"0x"},"latest"]}`
}

// TestKeyAllowlists: each list alone, the lists together (AND across
// kinds, OR within one), and batches that mix allowed and refused calls.
func TestKeyAllowlists(t *testing.T) {
	e := newKeysEnv(t, options{})
	_, addrKey := e.create(t, store.KeySpec{Name: "contracts", Rules: store.Rules{AllowAddresses: []string{allowedA, strings.ToUpper(allowedB[:2]) + allowedB[2:]}}})
	_, uaKey := e.create(t, store.KeySpec{Name: "agents", Rules: store.Rules{AllowUserAgents: []string{"viem/", "Go-http-client"}}})
	_, allKey := e.create(t, store.KeySpec{Name: "all", AllowMethods: []string{"eth_call", "eth_getLogs", "eth_chainId"}, AllowNetworks: []string{"testnet"},
		AllowOrigins: []string{"app.example.com"}, Rules: store.Rules{AllowAddresses: []string{allowedA}, AllowUserAgents: []string{"MyDapp/"}}})
	_, otherNet := e.create(t, store.KeySpec{Name: "elsewhere", AllowNetworks: []string{"mainnet"}})

	ok, refused := 200, 403
	tests := []struct {
		name    string
		key     string
		body    string
		headers []string
		status  int
		reason  string
	}{
		{"address: call to a listed contract", addrKey, ethCall(1, allowedA), nil, ok, ""},
		{"address: OR within the list, any case", addrKey, ethCall(1, "0x"+strings.ToUpper(allowedB[2:])), nil, ok, ""},
		{"address: another contract", addrKey, ethCall(1, other), nil, refused, "address"},
		{"address: estimateGas", addrKey, `{"jsonrpc":"2.0","id":1,"method":"eth_estimateGas","params":[{"to":"` + other + `"}]}`, nil, refused, "address"},
		{"address: contract creation names none", addrKey, `{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"data":"0x60"},"latest"]}`, nil, refused, "address"},
		{"address: balance of a listed one", addrKey, `{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["` + allowedA + `","latest"]}`, nil, ok, ""},
		{"address: code of another", addrKey, `{"jsonrpc":"2.0","id":1,"method":"eth_getCode","params":["` + other + `","latest"]}`, nil, refused, "address"},
		{"address: storage of another", addrKey, `{"jsonrpc":"2.0","id":1,"method":"eth_getStorageAt","params":["` + other + `","0x0","latest"]}`, nil, refused, "address"},
		{"address: getLogs of listed ones", addrKey, `{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[{"address":["` + allowedA + `","` + allowedB + `"]}]}`, nil, ok, ""},
		{"address: getLogs naming another too", addrKey, `{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[{"address":["` + allowedA + `","` + other + `"]}]}`, nil, refused, "address"},
		{"address: getLogs without an address", addrKey, `{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[{"fromBlock":"0x1"}]}`, nil, refused, "address"},
		{"address: to and To, read apart by nodes", addrKey, `{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"to":"` + other + `","To":"` + allowedA + `"},"latest"]}`, nil, refused, "address"},
		{"address: a state override", addrKey, `{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"to":"` + allowedA + `"},"latest",{"` + allowedA + `":{"code":"0x00"}}]}`, nil, refused, "address"},
		{"address: createAccessList of another", addrKey, `{"jsonrpc":"2.0","id":1,"method":"eth_createAccessList","params":[{"to":"` + other + `"}]}`, nil, refused, "address"},
		{"address: simulateV1 of another", addrKey, `{"jsonrpc":"2.0","id":1,"method":"eth_simulateV1","params":[{"blockStateCalls":[{"calls":[{"to":"` + other + `"}]}]},"latest"]}`, nil, refused, "address"},
		{"address: simulateV1 of a listed one", addrKey, `{"jsonrpc":"2.0","id":1,"method":"eth_simulateV1","params":[{"blockStateCalls":[{"calls":[{"to":"` + allowedA + `"}]}]},"latest"]}`, nil, ok, ""},
		{"address: storage values of another", addrKey, `{"jsonrpc":"2.0","id":1,"method":"eth_getStorageValues","params":[{"` + other + `":["0x0"]},"latest"]}`, nil, refused, "address"},
		{"address: a call without a target passes", addrKey, `{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}`, nil, ok, ""},
		{"user agent: substring", uaKey, chainID, []string{"User-Agent", "Mozilla/5.0 viem/2.21.0"}, ok, ""},
		{"user agent: OR, any case", uaKey, chainID, []string{"User-Agent", "go-http-client/1.1"}, ok, ""},
		{"user agent: another", uaKey, chainID, []string{"User-Agent", "curl/8.5.0"}, refused, "user_agent"},
		{"user agent: none", uaKey, chainID, []string{"User-Agent", ""}, refused, "user_agent"},
		{"network", otherNet, chainID, nil, refused, "network"},
		{"all: every list passes", allKey, ethCall(1, allowedA), []string{"User-Agent", "MyDapp/1.0", "Origin", "https://app.example.com"}, ok, ""},
		{"all: address refused, others pass", allKey, ethCall(1, other), []string{"User-Agent", "MyDapp/1.0", "Origin", "https://app.example.com"}, refused, "address"},
		{"all: user agent refused, others pass", allKey, ethCall(1, allowedA), []string{"User-Agent", "curl/8", "Origin", "https://app.example.com"}, refused, "user_agent"},
		{"all: origin refused, others pass", allKey, ethCall(1, allowedA), []string{"User-Agent", "MyDapp/1.0", "Origin", "https://evil.example.org"}, refused, "origin"},
		{"all: method refused, others pass", allKey, `{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["` + allowedA + `","latest"]}`, []string{"User-Agent", "MyDapp/1.0", "Origin", "https://app.example.com"}, refused, "method"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body, _ := e.call(t, tc.key, tc.body, tc.headers...)
			if status != tc.status {
				t.Fatalf("got %d %s, want %d", status, body, tc.status)
			}
			if tc.reason != "" && (!strings.Contains(body, `"code":-32002`) || !strings.Contains(body, `"reason":"`+tc.reason+`"`) || !strings.Contains(body, "rejected due to API key settings")) {
				t.Errorf("got %s, want -32002 with reason %s", body, tc.reason)
			}
		})
	}

	t.Run("batch, call by call", func(t *testing.T) {
		before := e.node.calls.Load()
		body := `[` + ethCall(1, allowedA) + `,` + ethCall(2, other) + `,{"jsonrpc":"2.0","id":3,"method":"eth_getLogs","params":[{}]},` + ethCall(4, allowedB) + `]`
		status, got, _ := e.call(t, addrKey, body)
		if status != 200 {
			t.Fatalf("%d %s", status, got)
		}
		var answers []struct {
			ID     int            `json:"id"`
			Result jsontext.Value `json:"result"`
			Error  *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(got), &answers); err != nil || len(answers) != 4 {
			t.Fatalf("%s: %v", got, err)
		}
		for _, a := range answers {
			wantOK := a.ID == 1 || a.ID == 4
			if wantOK != (a.Error == nil) || (!wantOK && a.Error.Code != portico.CodeKeyRejected) {
				t.Errorf("call %d: %s", a.ID, got)
			}
		}
		if n := e.node.calls.Load() - before; n != 2 {
			t.Errorf("the node got %d calls, want the 2 allowed", n)
		}
	})
}

// TestKeyCallBounds: a key's own bounds on calls in flight and per
// second refuse what passes them with -32005, 429 and Retry-After, apart
// from credits.
func TestKeyCallBounds(t *testing.T) {
	e := newKeysEnv(t, options{})
	t.Run("concurrent", func(t *testing.T) {
		_, key := e.create(t, store.KeySpec{Name: "one-at-a-time", Rules: store.Rules{MaxConcurrent: 1}})
		arrived, release := make(chan struct{}), make(chan struct{})
		e.node.setReply(func(w http.ResponseWriter, req map[string]jsontext.Value) {
			if string(req["method"]) == `"eth_blockNumber"` {
				close(arrived)
				<-release
			}
			w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":"0x1"}`))
		})
		done := make(chan int)
		go func() {
			status, _, _ := e.call(t, key, `{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}`)
			done <- status
		}()
		<-arrived
		status, body, h := e.call(t, key, chainID)
		if status != 429 || !strings.Contains(body, `"limit":"concurrent"`) || !strings.Contains(body, "-32005") || h.Get("Retry-After") == "" {
			t.Errorf("second call in flight: %d %s %v", status, body, h)
		}
		// Another key is not held by this one's bound.
		_, free := e.create(t, store.KeySpec{Name: "free"})
		if status, body, _ := e.call(t, free, chainID); status != 200 {
			t.Errorf("another key: %d %s", status, body)
		}
		close(release)
		if s := <-done; s != 200 {
			t.Errorf("first call: %d", s)
		}
		if status, body, _ := e.call(t, key, chainID); status != 200 {
			t.Errorf("after the first ended: %d %s", status, body)
		}
	})
	t.Run("per second", func(t *testing.T) {
		_, key := e.create(t, store.KeySpec{Name: "slow", Rules: store.Rules{RequestsPerSecond: 2}})
		// A batch of more calls than a second holds never fits.
		status, body, h := e.call(t, key, `[`+chainID+`,`+chainID+`,`+chainID+`]`)
		if status != 429 || !strings.Contains(body, `"limit":"requests"`) || h.Get("Retry-After") != "1" {
			t.Errorf("batch over the rate: %d %s %v", status, body, h)
		}
		if status, body, _ := e.call(t, key, chainID); status != 200 {
			t.Errorf("one call: %d %s", status, body)
		}
	})
}

// TestKeyRulesRefusalOrder: a caller that fails authentication learns
// nothing of the key's allowlists.
func TestKeyRulesRefusalOrder(t *testing.T) {
	e := newKeysEnv(t, options{})
	_, key := e.create(t, store.KeySpec{Name: "ordered", WithSecret: true, AllowNetworks: []string{"mainnet"}, Rules: store.Rules{AllowUserAgents: []string{"x"}}})
	// Without the secret the caller learns nothing of the allowlists.
	status, body, _ := e.call(t, key, chainID)
	if status != 401 || strings.Contains(body, "network") {
		t.Errorf("%d %s", status, body)
	}
}
