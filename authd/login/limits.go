package login

import (
	"net/http"
	"time"

	"github.com/porticohq/portico/authd/limit"
)

// Limits bound what one client IP, one email address and one user can do
// through the pages. Zero fields take the defaults of DefaultLimits; the
// table in docs/auth.md lists them.
//
// An email address's limits count per address and client IP, so that a
// stranger who knows the address cannot lock its owner out from
// elsewhere; a ceiling per address over all client IPs still bounds what
// many IPs together can do (guess codes, flood the inbox).
type Limits struct {
	// FlowsPerClient bounds the logins in progress per client IP.
	FlowsPerClient int
	// StartsPerClient bounds the logins a client IP starts per Window.
	StartsPerClient int
	// Window is the window of StartsPerClient.
	Window time.Duration
	// CodesPerEmail bounds the one-time codes sent to an address from one
	// client IP per hour.
	CodesPerEmail int
	// CodesCeiling bounds the one-time codes sent to an address per hour
	// from all client IPs together.
	CodesCeiling int
	// CodesPerClient bounds the one-time codes a client IP has sent per
	// hour, to any address.
	CodesPerClient int
	// CodeFailures wrong codes for an address from one client IP, across
	// codes and logins, lock that address for that client IP for
	// BackoffBase; each further one doubles the lock.
	CodeFailures int
	// CodeFailuresCeiling wrong codes for an address from all client IPs
	// together lock it for everyone, with the same backoff. Only a client
	// IP's first CodeFailures count towards it, so one client IP alone
	// never reaches it.
	CodeFailuresCeiling int
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
	DefaultFlowsPerClient  = 20
	DefaultStartsPerClient = 60
	DefaultLimitWindow     = 10 * time.Minute
	DefaultCodesPerEmail   = 5
	DefaultCodesCeiling    = 20
	DefaultCodesPerClient  = 30
	DefaultCodeFailures    = DefaultMaxAttempts
	// DefaultCodeFailuresCeiling takes three client IPs' free wrong codes.
	DefaultCodeFailuresCeiling = 3 * DefaultCodeFailures
	DefaultPasswordFailures    = 5
	DefaultBackoffBase         = time.Minute
	DefaultBackoffMax          = time.Hour
	DefaultKDFConcurrency      = 2
	DefaultMaxTracked          = limit.DefaultMaxKeys
	// BackoffForget is how long after its last failure a key's failures
	// are forgotten.
	BackoffForget = 24 * time.Hour
)

// DefaultLimits returns the documented defaults.
func DefaultLimits() Limits {
	return Limits{FlowsPerClient: DefaultFlowsPerClient, StartsPerClient: DefaultStartsPerClient, Window: DefaultLimitWindow,
		CodesPerEmail: DefaultCodesPerEmail, CodesCeiling: DefaultCodesCeiling, CodesPerClient: DefaultCodesPerClient,
		CodeFailures: DefaultCodeFailures, CodeFailuresCeiling: DefaultCodeFailuresCeiling,
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
	set(&l.CodesCeiling, d.CodesCeiling)
	set(&l.CodesPerClient, d.CodesPerClient)
	set(&l.CodeFailures, d.CodeFailures)
	set(&l.CodeFailuresCeiling, d.CodeFailuresCeiling)
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
	codesPair   *limit.Window // by emailClient
	codesEmail  *limit.Window // the ceiling, by email
	codesClient *limit.Window
	codeFails   *limit.Backoff // by emailClient
	failsEmail  *limit.Backoff // the ceiling, by email
	pwFails     *limit.Backoff
	kdf         limit.Semaphore
	// codeFree is CodeFailures: a pair's wrong codes that count towards
	// the ceiling.
	codeFree int
}

// newLimiters builds the counters; with shared set, each counts across
// instances under its own name.
func newLimiters(l Limits, now func() time.Time, shared limit.Shared) *limiters {
	backoff := func(name string, failures int) *limit.Backoff {
		return &limit.Backoff{Free: failures - 1, Base: l.BackoffBase, Max: l.BackoffMax, Forget: BackoffForget, MaxKeys: l.MaxTracked, Now: now,
			Shared: shared, Name: name}
	}
	window := func(name string, n int, per time.Duration) *limit.Window {
		return &limit.Window{Limit: n, Per: per, MaxKeys: l.MaxTracked, Now: now, Shared: shared, Name: name}
	}
	return &limiters{
		starts:      window("login-starts", l.StartsPerClient, l.Window),
		codesPair:   window("codes-pair", l.CodesPerEmail, time.Hour),
		codesEmail:  window("codes-email", l.CodesCeiling, time.Hour),
		codesClient: window("codes-client", l.CodesPerClient, time.Hour),
		codeFails:   backoff("code-fails-pair", l.CodeFailures),
		failsEmail:  backoff("code-fails-email", l.CodeFailuresCeiling),
		pwFails:     backoff("password-fails", l.PasswordFailures),
		kdf:         limit.NewSemaphore(l.KDFConcurrency),
		codeFree:    l.CodeFailures,
	}
}

// emailClient is the limit key of an email address from one client IP.
func emailClient(email, client string) string { return email + "\x00" + client }

// codeLocked reports whether wrong codes lock email for client: its own
// (per address and client IP), or everyone's past the ceiling.
func (l *limiters) codeLocked(email, client string) bool {
	return l.codeFails.Wait(emailClient(email, client)) > 0 || l.failsEmail.Wait(email) > 0
}

// codeFailed counts a wrong code for email from client and reports
// whether it is now locked for client. The pair's first codeFree wrong
// codes also count towards the address's ceiling.
func (l *limiters) codeFailed(email, client string) bool {
	n, lock := l.codeFails.Fail(emailClient(email, client))
	if n <= l.codeFree {
		if _, all := l.failsEmail.Fail(email); all > 0 {
			lock = all
		}
	}
	return lock > 0 || l.failsEmail.Wait(email) > 0
}

// codeSendable takes one code to email from client, within the pair's
// limit, the address's ceiling and the client's own limit.
func (l *limiters) codeSendable(email, client string) bool {
	return l.codesClient.Allow(client, 1) && l.codesPair.Allow(emailClient(email, client), 1) && l.codesEmail.Allow(email, 1)
}

// client is the limit key of a request.
func (h *Handler) client(r *http.Request) string { return limit.ClientIP(r, h.cfg.ClientIPHeader) }
