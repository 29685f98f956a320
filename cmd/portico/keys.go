package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/porticohq/portico/apikey"
	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/metering"
	"github.com/porticohq/portico/store"
)

// StoreFlags pick the store the same way serve does.
type StoreFlags struct {
	Config  string `help:"YAML config file (its data_dir and store.postgres are used)." type:"existingfile" env:"PORTICO_CONFIG"`
	DataDir string `help:"Data directory of the portico serve whose keys to manage." type:"path" env:"PORTICO_DATA_DIR"`
}

func (f *StoreFlags) open(ctx context.Context) (*store.Store, *config.Config, error) {
	cfg := config.DefaultConfig()
	if f.Config != "" {
		var err error
		if cfg, err = config.Load(f.Config); err != nil {
			return nil, nil, err
		}
	}
	if f.DataDir != "" {
		cfg.DataDir = f.DataDir
	}
	if cfg.DataDir == "" && cfg.Store.Postgres == "" {
		return nil, nil, fmt.Errorf("no store: pass --data-dir (or a config with data_dir or store.postgres)")
	}
	s, err := openStore(ctx, &cfg)
	return s, &cfg, err
}

// KeysCmd manages API keys.
type KeysCmd struct {
	Create     KeysCreateCmd     `cmd:"" help:"Create a key; the key is printed once, alone on the last line."`
	List       KeysListCmd       `cmd:"" help:"List keys."`
	Show       KeysShowCmd       `cmd:"" help:"Show one key."`
	Revoke     KeysRevokeCmd     `cmd:"" help:"Revoke a key."`
	SetBalance KeysSetBalanceCmd `cmd:"" name:"set-balance" help:"Set a key's daily credits and rate limit."`
	Hash       KeysHashCmd       `cmd:"" help:"Print the SHA-256 digest of a key, for keys[].hash in a config file."`
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
	k, secret, err := st.Create(ctx, store.KeySpec{Name: c.Name, DailyCredits: daily, RatePerSecond: c.Rate,
		AllowMethods: c.AllowMethods, AllowNetworks: c.AllowNetworks, AllowOrigins: c.AllowOrigins})
	if err != nil {
		return err
	}
	printKey(s, k)
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
	fmt.Fprintf(s.Out, "created:    %s\n", k.CreatedAt.Format(time.RFC3339))
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
	}{{"methods", k.AllowMethods}, {"networks", k.AllowNetworks}, {"origins", k.AllowOrigins}} {
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
