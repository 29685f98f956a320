package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/metering"
	"github.com/porticohq/portico/metering/apikey"
	"github.com/porticohq/portico/server"
	"github.com/porticohq/portico/store"
)

// StoreFlags pick the store the same way serve does.
type StoreFlags struct {
	Config  string `help:"YAML config file (its data_dir and store.postgres are used)." type:"existingfile" env:"PORTICO_CONFIG"`
	DataDir string `help:"Data directory of the portico serve whose keys to manage." type:"path" env:"PORTICO_DATA_DIR"`
}

func (f *StoreFlags) open(ctx context.Context) (*store.Store, *config.Config, error) {
	return server.OpenKeyStore(ctx, f.Config, f.DataDir)
}

// KeysCmd manages API keys.
type KeysCmd struct {
	Create     KeysCreateCmd     `cmd:"" help:"Create a key; the key is printed once, alone on the last line."`
	List       KeysListCmd       `cmd:"" help:"List keys."`
	Show       KeysShowCmd       `cmd:"" help:"Show one key."`
	Revoke     KeysRevokeCmd     `cmd:"" help:"Revoke a key."`
	SetBalance KeysSetBalanceCmd `cmd:"" name:"set-balance" help:"Set a key's daily credits and rate limit."`
	Set        KeysSetCmd        `cmd:"" help:"Change a key's allowlists, JWT keys, call bounds and log limits (docs/keys.md)."`
	Secret     KeysSecretCmd     `cmd:"" help:"Give a key a new secret (printed once) or drop it."`
	Hash       KeysHashCmd       `cmd:"" help:"Print the SHA-256 digest of a key, for keys[].hash in a config file."`
	Webhooks   KeysWebhooksCmd   `cmd:"" help:"Manage a key's webhooks (docs/webhooks.md)."`
}

// KeysCreateCmd creates a key.
type KeysCreateCmd struct {
	StoreFlags
	Name          string   `required:"" help:"Name of the key (shown in logs and usage)."`
	DailyCredits  int64    `help:"Daily credit balance (default: metering.default_daily_credits)."`
	Rate          int64    `help:"Credits per second; 0 means no rate limit."`
	AllowMethods  []string `help:"Only these methods (comma separated)."`
	AllowNetworks []string `help:"Only these networks (comma separated)."`
	AllowOrigins  []string `help:"Only requests with these Origins (https://app.example.com, example.com or *.example.com)."`
	WithSecret    bool     `help:"Give the key a secret that every call must carry (HTTP Basic auth password or X-Portico-Secret); printed once."`
	RulesFlags
}

// RulesFlags are a key's own rules as flags of keys create (docs/keys.md).
type RulesFlags struct {
	JWTKey            []string      `name:"jwt-key" help:"Require a JWT signed by this public key: NAME=FILE.pem (the name is the token's kid; RS256 or ES256; up to 3)." placeholder:"NAME=FILE"`
	JWTMaxLifetime    time.Duration `name:"jwt-max-lifetime" help:"Longest a token may be valid (exp after iat and after now); default 1h, at most 24h."`
	JWTAudience       string        `name:"jwt-audience" help:"The aud tokens must carry (default: the key's name)."`
	AllowAddresses    []string      `help:"Only calls to these contract addresses (comma separated; eth_call, eth_getLogs, state reads)."`
	AllowUserAgents   []string      `name:"allow-user-agents" help:"Only requests whose User-Agent contains one of these (comma separated)."`
	MaxConcurrent     int           `help:"Calls in flight at once for this key (per instance); 0 means no bound."`
	RequestsPerSecond int           `help:"Calls per second for this key (per instance), apart from credits; 0 means no bound."`
	LogMaxBlockRange  uint64        `name:"log-max-block-range" help:"This key's own bound on the blocks one eth_getLogs spans (0: the network's)."`
	LogMaxAddresses   int           `name:"log-max-addresses" help:"This key's own bound on the addresses of one log query (0: the network's)."`
	LogMaxTopics      int           `name:"log-max-topics" help:"This key's own bound on the topics of one log query (0: the network's)."`
	LogMaxLogs        int           `name:"log-max-logs" help:"This key's own bound on the logs one answer holds (0: the network's)."`
}

// jwtKeys reads NAME=FILE flags into public keys.
func jwtKeys(flags []string) ([]apikey.JWTKey, error) {
	var out []apikey.JWTKey
	for _, f := range flags {
		name, file, ok := strings.Cut(f, "=")
		if !ok || name == "" || file == "" {
			return nil, fmt.Errorf("--jwt-key: want NAME=FILE.pem, got %q", f)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--jwt-key %s: %w", name, err)
		}
		out = append(out, apikey.JWTKey{Name: name, PEM: string(b)})
	}
	return out, nil
}

func (f *RulesFlags) logs() *portico.LogLimits {
	l := portico.LogLimits{MaxBlockRange: f.LogMaxBlockRange, MaxAddresses: f.LogMaxAddresses, MaxTopics: f.LogMaxTopics, MaxLogs: f.LogMaxLogs}
	if l == (portico.LogLimits{}) {
		return nil
	}
	return &l
}

func (f *RulesFlags) rules() (store.Rules, error) {
	keys, err := jwtKeys(f.JWTKey)
	if err != nil {
		return store.Rules{}, err
	}
	return store.Rules{JWTKeys: keys, JWTMaxLifetime: f.JWTMaxLifetime, JWTAudience: f.JWTAudience,
		AllowAddresses: f.AllowAddresses, AllowUserAgents: f.AllowUserAgents,
		MaxConcurrent: f.MaxConcurrent, RequestsPerSecond: f.RequestsPerSecond, Logs: f.logs()}, nil
}

// Run creates the key.
func (c *KeysCreateCmd) Run(ctx context.Context, s *Streams) error {
	st, cfg, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	daily := c.DailyCredits
	if daily == 0 {
		daily = cfg.Metering.DefaultDailyCredits
	}
	rules, err := c.rules()
	if err != nil {
		return err
	}
	k, secret, err := st.Create(ctx, store.KeySpec{Name: c.Name, DailyCredits: daily, RatePerSecond: c.Rate,
		AllowMethods: c.AllowMethods, AllowNetworks: c.AllowNetworks, AllowOrigins: c.AllowOrigins,
		Rules: rules, WithSecret: c.WithSecret})
	if err != nil {
		return err
	}
	printKey(s, k)
	if k.NewSecret != "" {
		fmt.Fprintln(s.Out, "The secret is shown once; store it now. Send it as the password of HTTP Basic auth or in X-Portico-Secret.")
		fmt.Fprintf(s.Out, "secret:     %s\n", k.NewSecret)
	}
	fmt.Fprintln(s.Out, "The key is shown once; store it now. Only its SHA-256 digest is kept.")
	fmt.Fprintln(s.Out, secret)
	return nil
}

// KeysListCmd lists keys.
type KeysListCmd struct {
	StoreFlags
	All bool `help:"Include revoked keys."`
}

// Run lists the keys.
func (c *KeysListCmd) Run(ctx context.Context, s *Streams) error {
	st, _, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	keys, err := st.List(ctx, c.All)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(s.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tDAILY CREDITS\tRATE/S\tRESTRICTIONS\tCREATED\tSTATUS")
	for _, k := range keys {
		status := "active"
		if !k.Active() {
			status = "revoked " + k.RevokedAt.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", k.Name, k.DailyCredits, rate(k.RatePerSecond), restrictions(k), k.CreatedAt.Format(time.RFC3339), status)
	}
	return tw.Flush()
}

// KeysShowCmd shows a key.
type KeysShowCmd struct {
	StoreFlags
	Name string `arg:"" help:"Key name."`
}

// Run shows the key and what it spent today.
func (c *KeysShowCmd) Run(ctx context.Context, s *Streams) error {
	st, _, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	k, err := st.Get(ctx, c.Name)
	if err != nil {
		return err
	}
	printKey(s, k)
	day, reset := metering.BillingDay(time.Now())
	spent, err := st.Spent(ctx, k.ID, day)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "today:      %d of %d credits used (as flushed to the store), resets %s\n", spent, k.DailyCredits, reset.Format(time.RFC3339))
	return nil
}

// KeysRevokeCmd revokes a key.
type KeysRevokeCmd struct {
	StoreFlags
	Name string `arg:"" help:"Key name."`
}

// Run revokes the key.
func (c *KeysRevokeCmd) Run(ctx context.Context, s *Streams) error {
	st, cfg, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.Revoke(ctx, c.Name); err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "revoked %s; running servers refuse it within %s\n", c.Name, cfg.Store.KeyCacheTTL)
	return nil
}

// KeysSetBalanceCmd changes a key's limits.
type KeysSetBalanceCmd struct {
	StoreFlags
	Name         string `arg:"" help:"Key name."`
	DailyCredits *int64 `help:"New daily credit balance."`
	Rate         *int64 `help:"New credits-per-second limit; 0 removes it."`
}

// Run updates the key.
func (c *KeysSetBalanceCmd) Run(ctx context.Context, s *Streams) error {
	if c.DailyCredits == nil && c.Rate == nil {
		return fmt.Errorf("set-balance: give --daily-credits, --rate or both")
	}
	st, cfg, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	k, err := st.Update(ctx, c.Name, store.Patch{DailyCredits: c.DailyCredits, RatePerSecond: c.Rate})
	if err != nil {
		return err
	}
	printKey(s, k)
	fmt.Fprintf(s.Out, "running servers apply it within %s\n", cfg.Store.KeyCacheTTL)
	return nil
}

// KeysSetCmd changes a key's own rules; flags not given stay as they are.
type KeysSetCmd struct {
	StoreFlags
	Name              string         `arg:"" help:"Key name."`
	AllowMethods      *string        `help:"Only these methods (comma separated; \"\" lifts the restriction)."`
	AllowNetworks     *string        `help:"Only these networks (comma separated; \"\" lifts it)."`
	AllowOrigins      *string        `help:"Only these Origins (comma separated; \"\" lifts it)."`
	AllowAddresses    *string        `help:"Only calls to these contract addresses (comma separated; \"\" lifts it)."`
	AllowUserAgents   *string        `name:"allow-user-agents" help:"Only User-Agents containing one of these (comma separated; \"\" lifts it)."`
	JWTKey            []string       `name:"jwt-key" help:"Replace the JWT public keys: NAME=FILE.pem, repeated (up to 3)." placeholder:"NAME=FILE"`
	NoJWT             bool           `name:"no-jwt" help:"Stop requiring a JWT."`
	JWTMaxLifetime    *time.Duration `name:"jwt-max-lifetime" help:"Longest a token may be valid (0: 1h)."`
	JWTAudience       *string        `name:"jwt-audience" help:"The aud tokens must carry (\"\": the key's name)."`
	MaxConcurrent     *int           `help:"Calls in flight at once (0: no bound)."`
	RequestsPerSecond *int           `help:"Calls per second, apart from credits (0: no bound)."`
	LogMaxBlockRange  *uint64        `name:"log-max-block-range" help:"This key's bound on one eth_getLogs' block range (0: the network's)."`
	LogMaxAddresses   *int           `name:"log-max-addresses" help:"This key's bound on a log query's addresses (0: the network's)."`
	LogMaxTopics      *int           `name:"log-max-topics" help:"This key's bound on a log query's topics (0: the network's)."`
	LogMaxLogs        *int           `name:"log-max-logs" help:"This key's bound on the logs of one answer (0: the network's)."`
}

// list splits a comma-separated flag; nil when the flag was not given.
func list(v *string) *[]string {
	if v == nil {
		return nil
	}
	out := []string{}
	for _, e := range strings.Split(*v, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return &out
}

// Run updates the key.
func (c *KeysSetCmd) Run(ctx context.Context, s *Streams) error {
	p := store.Patch{AllowMethods: list(c.AllowMethods), AllowNetworks: list(c.AllowNetworks), AllowOrigins: list(c.AllowOrigins),
		Rules: store.RulesPatch{AllowAddresses: list(c.AllowAddresses), AllowUserAgents: list(c.AllowUserAgents),
			JWTMaxLifetime: c.JWTMaxLifetime, JWTAudience: c.JWTAudience, MaxConcurrent: c.MaxConcurrent, RequestsPerSecond: c.RequestsPerSecond}}
	switch {
	case c.NoJWT && len(c.JWTKey) > 0:
		return fmt.Errorf("set: --no-jwt and --jwt-key exclude each other")
	case c.NoJWT:
		none, zero, empty := []apikey.JWTKey{}, time.Duration(0), ""
		p.Rules.JWTKeys, p.Rules.JWTMaxLifetime, p.Rules.JWTAudience = &none, &zero, &empty
	case len(c.JWTKey) > 0:
		keys, err := jwtKeys(c.JWTKey)
		if err != nil {
			return err
		}
		p.Rules.JWTKeys = &keys
	}
	if c.LogMaxBlockRange != nil || c.LogMaxAddresses != nil || c.LogMaxTopics != nil || c.LogMaxLogs != nil {
		p.Rules.LogBounds = &store.LogBoundsPatch{MaxBlockRange: c.LogMaxBlockRange, MaxAddresses: c.LogMaxAddresses,
			MaxTopics: c.LogMaxTopics, MaxLogs: c.LogMaxLogs}
	}
	st, cfg, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	k, err := st.Update(ctx, c.Name, p)
	if err != nil {
		return err
	}
	printKey(s, k)
	fmt.Fprintf(s.Out, "running servers apply it within %s\n", cfg.Store.KeyCacheTTL)
	return nil
}

// KeysSecretCmd rotates or drops a key's secret.
type KeysSecretCmd struct {
	StoreFlags
	Name   string        `arg:"" help:"Key name."`
	Grace  time.Duration `help:"How long the previous secret keeps working (0 stops it at once, as after a leak)." default:"24h"`
	Remove bool          `help:"Drop the key's secret: calls need none again."`
}

// Run gives the key a new secret and prints it once, alone on the last
// line, or drops it.
func (c *KeysSecretCmd) Run(ctx context.Context, s *Streams) error {
	st, cfg, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if c.Remove {
		if _, err := st.RemoveSecret(ctx, c.Name); err != nil {
			return err
		}
		fmt.Fprintf(s.Out, "secret of %s removed; running servers apply it within %s\n", c.Name, cfg.Store.KeyCacheTTL)
		return nil
	}
	k, secret, err := st.RotateSecret(ctx, c.Name, c.Grace)
	if err != nil {
		return err
	}
	printKey(s, k)
	if !k.Rules.PrevSecretUntil.IsZero() {
		fmt.Fprintf(s.Out, "The previous secret works until %s.\n", k.Rules.PrevSecretUntil.Format(time.RFC3339))
	}
	fmt.Fprintln(s.Out, "The secret is shown once; store it now. Only its SHA-256 digest is kept.")
	fmt.Fprintln(s.Out, secret)
	return nil
}

// KeysHashCmd prints a key's digest.
type KeysHashCmd struct {
	Key string `arg:"" help:"The key."`
}

// Run prints the digest.
func (c *KeysHashCmd) Run(s *Streams) error {
	if err := apikey.Check(c.Key); err != nil {
		return err
	}
	fmt.Fprintln(s.Out, apikey.Sum(c.Key))
	return nil
}

func printKey(s *Streams, k store.Key) {
	fmt.Fprintf(s.Out, "name:       %s\n", k.Name)
	fmt.Fprintf(s.Out, "daily:      %d credits\n", k.DailyCredits)
	fmt.Fprintf(s.Out, "rate:       %s\n", rate(k.RatePerSecond))
	fmt.Fprintf(s.Out, "restricted: %s\n", restrictions(k))
	r := k.Rules
	if r.HasSecret() {
		fmt.Fprintln(s.Out, "auth:       a secret (HTTP Basic auth password or X-Portico-Secret)")
	}
	if len(r.JWTKeys) > 0 {
		names := make([]string, len(r.JWTKeys))
		for i, j := range r.JWTKeys {
			names[i] = j.Name
		}
		life := r.JWTMaxLifetime
		if life == 0 {
			life = apikey.DefaultJWTMaxLifetime
		}
		aud := r.JWTAudience
		if aud == "" {
			aud = k.Name
		}
		fmt.Fprintf(s.Out, "jwt:        required, kid %s, aud %q, max lifetime %s\n", strings.Join(names, ","), aud, life)
	}
	if r.MaxConcurrent > 0 || r.RequestsPerSecond > 0 {
		fmt.Fprintf(s.Out, "calls:      %s in flight, %s per second\n", bound(r.MaxConcurrent), bound(r.RequestsPerSecond))
	}
	if l := r.Logs; l != nil {
		fmt.Fprintf(s.Out, "logs:       block range %d, addresses %d, topics %d, logs %d (0: the network's)\n", l.MaxBlockRange, l.MaxAddresses, l.MaxTopics, l.MaxLogs)
	}
	fmt.Fprintf(s.Out, "created:    %s\n", k.CreatedAt.Format(time.RFC3339))
}

func bound(n int) string {
	if n == 0 {
		return "no bound"
	}
	return fmt.Sprint(n)
}

func rate(r int64) string {
	if r == 0 {
		return "unlimited"
	}
	return fmt.Sprintf("%d credits/s", r)
}

func restrictions(k store.Key) string {
	var parts []string
	for _, l := range []struct {
		name string
		v    []string
	}{{"methods", k.AllowMethods}, {"networks", k.AllowNetworks}, {"origins", k.AllowOrigins},
		{"addresses", k.Rules.AllowAddresses}, {"user-agents", k.Rules.AllowUserAgents}} {
		if len(l.v) > 0 {
			parts = append(parts, l.name+"="+strings.Join(l.v, ","))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// UsageCmd prints usage history.
type UsageCmd struct {
	StoreFlags
	Key  string `help:"Only this key."`
	From string `help:"First UTC day, YYYY-MM-DD (default: 7 days ago)."`
	To   string `help:"Last UTC day, YYYY-MM-DD (default: today)."`
}

// Run prints calls and credits per key, day and method.
func (c *UsageCmd) Run(ctx context.Context, s *Streams) error {
	st, _, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	f := store.UsageFilter{From: c.From, To: c.To}
	if f.From == "" {
		f.From, _ = metering.BillingDay(time.Now().AddDate(0, 0, -7))
	}
	for _, d := range []struct{ flag, v string }{{"--from", f.From}, {"--to", f.To}} {
		if _, err := time.Parse(time.DateOnly, d.v); d.v != "" && err != nil {
			return fmt.Errorf("%s: want YYYY-MM-DD, got %q", d.flag, d.v)
		}
	}
	if c.Key != "" {
		k, err := st.Get(ctx, c.Key)
		if err != nil {
			return err
		}
		f.KeyID = k.ID
	}
	rows, err := st.Usage(ctx, f)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(s.Out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "DAY\tKEY\tMETHOD\tCALLS\tCREDITS\t")
	var calls, credits int64
	for _, u := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t\n", u.Day, u.KeyName, u.Method, u.Calls, u.Credits)
		calls, credits = calls+u.Calls, credits+u.Credits
	}
	fmt.Fprintf(tw, "total\t\t\t%d\t%d\t\n", calls, credits)
	return tw.Flush()
}
