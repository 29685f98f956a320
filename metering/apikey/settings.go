package apikey

import (
	"fmt"
	"strings"
	"time"

	"github.com/porticohq/portico"
)

// Settings are a key's own settings as an operator gives them: a config
// file's key, the CLI, the admin API or the dashboard (through the store).
// A nil field is not given. Check is the one set of checks every way in
// runs, so that `portico config check`, a reload and the store agree on
// what a key may be set to.
type Settings struct {
	AllowAddresses    *[]string
	AllowUserAgents   *[]string
	MaxConcurrent     *int
	RequestsPerSecond *int
	JWTKeys           *[]JWTKey
	JWTMaxLifetime    *time.Duration
	JWTAudience       *string
	Logs              *portico.LogLimits
}

// SettingError reports a bad key setting; Field is its name as the
// config file and the admin API write it (allow_addresses[2]).
type SettingError struct {
	Field  string
	Reason string
}

// Error names the field and what is wrong with it.
func (e *SettingError) Error() string { return e.Field + ": " + e.Reason }

// MaxUserAgentLength bounds one entry of a User-Agent allowlist.
const MaxUserAgentLength = 256

// Check checks each setting given. Settings that depend on one another
// are checked when both are given: a JWT audience or lifetime needs public
// keys, which a partial change (a config file that sets the audience of a
// key whose keys the store holds) leaves to the store.
func (s Settings) Check() error {
	if s.AllowAddresses != nil {
		for i, a := range *s.AllowAddresses {
			if !ValidAddress(a) {
				return &SettingError{fmt.Sprintf("allow_addresses[%d]", i), fmt.Sprintf("want a 0x address of 20 bytes, got %q", a)}
			}
		}
	}
	if s.AllowUserAgents != nil {
		for i, ua := range *s.AllowUserAgents {
			if strings.TrimSpace(ua) == "" || len(ua) > MaxUserAgentLength {
				return &SettingError{fmt.Sprintf("allow_user_agents[%d]", i), fmt.Sprintf("want 1 to %d characters, not only spaces, got %q", MaxUserAgentLength, ua)}
			}
		}
	}
	if s.MaxConcurrent != nil && *s.MaxConcurrent < 0 {
		return &SettingError{"max_concurrent", "must not be negative"}
	}
	if s.RequestsPerSecond != nil && *s.RequestsPerSecond < 0 {
		return &SettingError{"requests_per_second", "must not be negative"}
	}
	var life time.Duration
	if s.JWTMaxLifetime != nil {
		if life = *s.JWTMaxLifetime; life < 0 || life > MaxJWTLifetime {
			return &SettingError{"jwt_max_lifetime", "must be 0 (the default, 1h) to 24h"}
		}
	}
	var aud string
	if s.JWTAudience != nil {
		aud = *s.JWTAudience
	}
	if s.JWTKeys != nil {
		if len(*s.JWTKeys) > 0 {
			if _, err := NewJWT(*s.JWTKeys, life, aud); err != nil {
				return &SettingError{"jwt_keys", err.Error()}
			}
		} else if life != 0 || aud != "" {
			return &SettingError{"jwt_keys", "jwt_max_lifetime and jwt_audience need at least one public key"}
		}
	}
	if l := s.Logs; l != nil && (l.MaxAddresses < 0 || l.MaxTopics < 0 || l.MaxLogs < 0) {
		return &SettingError{"logs", "bounds must not be negative"}
	}
	return nil
}

// CheckName checks a key's name: 1 to 64 printable characters without
// spaces, so that it is safe in logs and on a command line.
func CheckName(name string) error {
	if name == "" || len(name) > 64 {
		return &SettingError{"name", fmt.Sprintf("must be 1 to 64 characters, got %d", len(name))}
	}
	for _, r := range name {
		if r <= ' ' || r == 0x7f {
			return &SettingError{"name", fmt.Sprintf("%q: no spaces or control characters", name)}
		}
	}
	return nil
}
