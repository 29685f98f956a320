package login

import (
	"net/http"
	"time"

	"github.com/porticohq/portico/authd/limit"
)

// Limits bound what one client IP, one email address and one user can do
// through the pages. Zero fields take the defaults of DefaultLimits; the
// table in docs/auth.md lists them.
type Limits struct {
	// FlowsPerClient bounds the logins in progress per client IP.
	FlowsPerClient int
	// StartsPerClient bounds the logins a client IP starts per Window.
	StartsPerClient int
	// Window is the window of StartsPerClient.
	Window time.Duration
	// CodesPerEmail bounds the one-time codes sent to an address per hour.
	CodesPerEmail int
	// CodesPerClient bounds the one-time codes a client IP has sent per
	// hour, to any address.
	CodesPerClient int
	// CodeFailures wrong codes for an address, across codes and logins,
	// lock it for BackoffBase; each further one doubles the lock.
	CodeFailures int
	// PasswordFailures wrong MFA passwords for a user lock the user's
	// password factor for BackoffBase; each further one doubles the lock.
	PasswordFailures int
	// BackoffBase is the first lock after the free failures; each further
	// failure doubles it, up to BackoffMax. Failures are forgotten a day
	// (BackoffForget) after the last one.
	BackoffBase time.Duration
	// BackoffMax caps a lock.
	BackoffMax time.Duration
	// KDFConcurrency bounds the Argon2id runs (MFA passwords) at once.
	KDFConcurrency int
	// MaxTracked bounds the keys (client IPs, addresses, users) each
	// counter holds in memory.
	MaxTracked int
}

// Defaults of Limits.
const (
	DefaultFlowsPerClient   = 20
	DefaultStartsPerClient  = 60
	DefaultLimitWindow      = 10 * time.Minute
	DefaultCodesPerEmail    = 5
	DefaultCodesPerClient   = 30
	DefaultCodeFailures     = DefaultMaxAttempts
	DefaultPasswordFailures = 5
	DefaultBackoffBase      = time.Minute
	DefaultBackoffMax       = time.Hour
	DefaultKDFConcurrency   = 2
	DefaultMaxTracked       = limit.DefaultMaxKeys
	// BackoffForget is how long after its last failure a key's failures
	// are forgotten.
	BackoffForget = 24 * time.Hour
)

// DefaultLimits returns the documented defaults.
func DefaultLimits() Limits {
	return Limits{FlowsPerClient: DefaultFlowsPerClient, StartsPerClient: DefaultStartsPerClient, Window: DefaultLimitWindow,
		CodesPerEmail: DefaultCodesPerEmail, CodesPerClient: DefaultCodesPerClient, CodeFailures: DefaultCodeFailures,
		PasswordFailures: DefaultPasswordFailures, BackoffBase: DefaultBackoffBase, BackoffMax: DefaultBackoffMax,
		KDFConcurrency: DefaultKDFConcurrency, MaxTracked: DefaultMaxTracked}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	set := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	setD := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&l.FlowsPerClient, d.FlowsPerClient)
	set(&l.StartsPerClient, d.StartsPerClient)
	set(&l.CodesPerEmail, d.CodesPerEmail)
	set(&l.CodesPerClient, d.CodesPerClient)
	set(&l.CodeFailures, d.CodeFailures)
	set(&l.PasswordFailures, d.PasswordFailures)
	set(&l.KDFConcurrency, d.KDFConcurrency)
	set(&l.MaxTracked, d.MaxTracked)
	setD(&l.Window, d.Window)
	setD(&l.BackoffBase, d.BackoffBase)
	setD(&l.BackoffMax, d.BackoffMax)
	return l
}

// limiters are the pages' counters, built from Limits.
type limiters struct {
	starts      *limit.Window
	codesEmail  *limit.Window
	codesClient *limit.Window
	codeFails   *limit.Backoff
	pwFails     *limit.Backoff
	kdf         limit.Semaphore
}

func newLimiters(l Limits, now func() time.Time) *limiters {
	backoff := func(failures int) *limit.Backoff {
		return &limit.Backoff{Free: failures - 1, Base: l.BackoffBase, Max: l.BackoffMax, Forget: BackoffForget, MaxKeys: l.MaxTracked, Now: now}
	}
	return &limiters{
		starts:      &limit.Window{Limit: l.StartsPerClient, Per: l.Window, MaxKeys: l.MaxTracked, Now: now},
		codesEmail:  &limit.Window{Limit: l.CodesPerEmail, Per: time.Hour, MaxKeys: l.MaxTracked, Now: now},
		codesClient: &limit.Window{Limit: l.CodesPerClient, Per: time.Hour, MaxKeys: l.MaxTracked, Now: now},
		codeFails:   backoff(l.CodeFailures),
		pwFails:     backoff(l.PasswordFailures),
		kdf:         limit.NewSemaphore(l.KDFConcurrency),
	}
}

// client is the limit key of a request.
func (h *Handler) client(r *http.Request) string { return limit.ClientIP(r, h.cfg.ClientIPHeader) }
