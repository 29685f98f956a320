package authwire

import (
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// Validate checks every field and returns a *FieldError naming the first
// bad one.
func (p InitParams) Validate() error {
	if strings.TrimSpace(p.ClientID) == "" {
		return &FieldError{Field: "clientId", Reason: "is required"}
	}
	if p.Network == "" {
		return &FieldError{Field: "network", Reason: "is required"}
	}
	if !p.Network.Valid() {
		return &FieldError{Field: "network", Value: string(p.Network), Reason: "is not a known network (" + joinNetworks() + ")"}
	}
	if !p.BuildEnv.Valid() {
		return &FieldError{Field: "buildEnv", Value: string(p.BuildEnv), Reason: "is not production, staging or testing"}
	}
	if p.SDKURL != "" {
		if err := checkHTTPURL("sdkUrl", p.SDKURL); err != nil {
			return err
		}
	}
	if p.RedirectURL != "" {
		if u, err := url.Parse(p.RedirectURL); err != nil || u.Scheme == "" {
			return &FieldError{Field: "redirectUrl", Value: p.RedirectURL, Reason: "is not an absolute URL"}
		}
	}
	if p.WhiteLabel != nil {
		if err := p.WhiteLabel.Validate(); err != nil {
			fe := err.(*FieldError)
			fe.Field = "whiteLabel." + fe.Field
			return fe
		}
	}
	keys := make([]string, 0, len(p.LoginConfig))
	for k := range p.LoginConfig {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		c := p.LoginConfig[k]
		prefix := "loginConfig." + k + "."
		switch {
		case c.Verifier == "":
			return &FieldError{Field: prefix + "verifier", Reason: "is required"}
		case c.TypeOfLogin == "":
			return &FieldError{Field: prefix + "typeOfLogin", Reason: "is required"}
		case !c.TypeOfLogin.Valid():
			return &FieldError{Field: prefix + "typeOfLogin", Value: string(c.TypeOfLogin), Reason: "is not a known login type"}
		case c.ClientID == "":
			return &FieldError{Field: prefix + "clientId", Reason: "is required"}
		}
	}
	if !p.ChainNamespace.Valid() {
		return &FieldError{Field: "chainNamespace", Value: string(p.ChainNamespace), Reason: "is not eip155 or solana"}
	}
	if p.SessionTime < 0 || p.SessionTime > MaxSessionTime {
		return &FieldError{Field: "sessionTime", Value: strconv.Itoa(p.SessionTime), Reason: "is out of range (1 to 604800 seconds, 0 for the default 86400)"}
	}
	return nil
}

// Validate checks the enumerated fields.
func (w WhiteLabelData) Validate() error {
	if !w.DefaultLanguage.Valid() {
		return &FieldError{Field: "defaultLanguage", Value: string(w.DefaultLanguage), Reason: "is not a supported language (en, de, ja, ko, zh, es, fr, pt, nl)"}
	}
	if !w.Mode.Valid() {
		return &FieldError{Field: "mode", Value: string(w.Mode), Reason: "is not light, dark or auto"}
	}
	return nil
}

// Validate checks the login parameters.
func (p LoginParams) Validate() error {
	if p.LoginProvider == "" {
		return &FieldError{Field: "loginProvider", Reason: "is required"}
	}
	if !p.LoginProvider.Valid() {
		return &FieldError{Field: "loginProvider", Value: string(p.LoginProvider), Reason: "is not a known provider"}
	}
	if !p.MfaLevel.Valid() {
		return &FieldError{Field: "mfaLevel", Value: string(p.MfaLevel), Reason: "is not default, optional, mandatory or none"}
	}
	if !p.Curve.Valid() {
		return &FieldError{Field: "curve", Value: string(p.Curve), Reason: "is not secp256k1 or ed25519"}
	}
	if p.RedirectURL != "" {
		if u, err := url.Parse(p.RedirectURL); err != nil || u.Scheme == "" {
			return &FieldError{Field: "redirectUrl", Value: p.RedirectURL, Reason: "is not an absolute URL"}
		}
	}
	return nil
}

func checkHTTPURL(field, s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &FieldError{Field: field, Value: s, Reason: "is not an http(s) URL"}
	}
	return nil
}

func joinNetworks() string {
	var b strings.Builder
	for i, n := range Networks() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(n))
	}
	return b.String()
}

// EffectiveSessionTime returns SessionTime, or DefaultSessionTime when it
// is 0.
func (p InitParams) EffectiveSessionTime() int {
	if p.SessionTime == 0 {
		return DefaultSessionTime
	}
	return p.SessionTime
}
