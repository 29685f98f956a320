package auth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Change is one line of a migration report.
type Change struct {
	// Field is the v7 JSON path the change concerns (or the v6 one for a
	// dropped field).
	Field string
	// Note says what changed and why.
	Note string
}

// String formats the change as a report line.
func (c Change) String() string { return c.Field + ": " + c.Note }

// MigrationError reports v6 input that cannot be migrated; Field is the
// v6 JSON path.
type MigrationError struct {
	// Field is the v6 JSON path of the bad value.
	Field string
	// Reason says why it cannot be migrated.
	Reason string
}

// Error names the field.
func (e *MigrationError) Error() string { return "auth: migrate v6: " + e.Field + ": " + e.Reason }

// The v6 defaults of sdkUrl, chosen by network (swift 6.0.1).
const (
	v6SDKURL        = "https://sdk.openlogin.com"
	v6TestnetSDKURL = "https://dev-sdk.openlogin.com"
)

var (
	v6InitKeys       = []string{"clientId", "network", "sdkUrl", "redirectUrl", "loginConfig", "whiteLabel", "chainNamespace", "useCoreKitKey"}
	v6WhiteLabelKeys = []string{"name", "logoLight", "logoDark", "defaultLanguage", "dark", "theme"}
	v6LoginKeys      = []string{"loginProvider", "dappShare", "extraLoginOptions", "redirectUrl", "appState", "mfaLevel", "sessionTime", "curve"}
)

// MigrateV6 turns a v6 configuration into v7 init params. The input is
// either v6 init params (W3AInitParams, v6 Codable keys) or the v6 login
// payload {"init": init params, "params": login params}, whose sessionTime
// moves to the init params in v7. The report has one line per change,
// including the new v7 fields and their defaults. Input that cannot be
// migrated returns a *MigrationError naming the v6 field.
func MigrateV6(v6 []byte) (InitParams, []Change, error) {
	m := &migration{}
	out, err := m.run(v6)
	return out, m.report, err
}

type migration struct {
	report []Change
}

func (m *migration) note(field, format string, args ...any) {
	m.report = append(m.report, Change{Field: field, Note: fmt.Sprintf(format, args...)})
}

func (m *migration) object(field string, raw []byte) (map[string]json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		if field == "" {
			field = "(input)"
		}
		return nil, &MigrationError{Field: field, Reason: "must be a JSON object"}
	}
	return obj, nil
}

// unknown reports keys of obj that v6 did not have; Codable ignored them.
func (m *migration) unknown(prefix string, obj map[string]json.RawMessage, known []string) {
	var extra []string
	for k := range obj {
		if !contains(known, k) {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	for _, k := range extra {
		m.note(prefix+k, "not a v6 field; ignored (check the spelling)")
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func decodeField[T any](field string, raw json.RawMessage, kind string) (T, error) {
	var v T
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&v); err != nil {
		return v, &MigrationError{Field: field, Reason: "must be " + kind}
	}
	return v, nil
}

func (m *migration) run(input []byte) (InitParams, error) {
	top, err := m.object("", input)
	if err != nil {
		return InitParams{}, err
	}
	initObj, prefix := top, ""
	var params map[string]json.RawMessage
	if rawInit, ok := top["init"]; ok {
		prefix = "init."
		if initObj, err = m.object("init", rawInit); err != nil {
			return InitParams{}, err
		}
		if rawParams, ok := top["params"]; ok {
			if params, err = m.object("params", rawParams); err != nil {
				return InitParams{}, err
			}
		}
		m.unknown("", top, []string{"init", "params"})
	}
	m.unknown(prefix, initObj, v6InitKeys)

	var out InitParams
	str := func(key string) (string, error) {
		raw, ok := initObj[key]
		if !ok {
			return "", nil
		}
		return decodeField[string](prefix+key, raw, "a string")
	}
	if out.ClientID, err = str("clientId"); err != nil {
		return out, err
	}
	if out.ClientID == "" {
		return out, &MigrationError{Field: prefix + "clientId", Reason: "is required"}
	}
	network, err := str("network")
	if err != nil {
		return out, err
	}
	out.Network = Network(network)
	if network == "" {
		return out, &MigrationError{Field: prefix + "network", Reason: "is required"}
	}
	if !out.Network.Valid() {
		return out, &MigrationError{Field: prefix + "network", Reason: strconv.Quote(network) + " is not a network (" + joinNetworks() + ")"}
	}
	m.note("network", "%s kept (v7 adds sapphire_devnet and sapphire_mainnet)", network)

	out.BuildEnv = Production
	m.note("buildEnv", "new in v7; set to the default %q (it chooses the login pages' URL)", Production)

	sdkURL, err := str("sdkUrl")
	if err != nil {
		return out, err
	}
	switch strings.TrimRight(sdkURL, "/") {
	case "":
	case v6SDKURL, v6TestnetSDKURL:
		m.note("sdkUrl", "dropped the v6 default %s; v7 derives the URL from buildEnv (%s)", sdkURL, SDKURLFor(Production))
	default:
		if err := checkHTTPURL("sdkUrl", sdkURL); err != nil {
			return out, &MigrationError{Field: prefix + "sdkUrl", Reason: "is not an http(s) URL"}
		}
		out.SDKURL = sdkURL
		m.note("sdkUrl", "custom URL kept; it must serve the v7 flow (%s/start with a loginId)", strings.TrimRight(sdkURL, "/"))
	}
	if out.RedirectURL, err = str("redirectUrl"); err != nil {
		return out, err
	}
	if raw, ok := initObj["useCoreKitKey"]; ok && string(raw) != "null" {
		b, err := decodeField[bool](prefix+"useCoreKitKey", raw, "a boolean")
		if err != nil {
			return out, err
		}
		out.UseCoreKitKey = &b
	}
	ns, err := str("chainNamespace")
	if err != nil {
		return out, err
	}
	switch ns {
	case "":
	case "eip555":
		out.ChainNamespace = EIP155
		m.note("chainNamespace", `"eip555" (the v6 spelling) → "eip155"`)
	case string(EIP155), string(Solana):
		out.ChainNamespace = ChainNamespace(ns)
	default:
		return out, &MigrationError{Field: prefix + "chainNamespace", Reason: strconv.Quote(ns) + " is not eip155 or solana"}
	}
	if raw, ok := initObj["loginConfig"]; ok && string(raw) != "null" {
		if out.LoginConfig, err = m.loginConfig(prefix+"loginConfig", raw); err != nil {
			return out, err
		}
	}
	if raw, ok := initObj["whiteLabel"]; ok && string(raw) != "null" {
		wl, err := m.whiteLabel(prefix+"whiteLabel", raw)
		if err != nil {
			return out, err
		}
		out.WhiteLabel = wl
	}
	m.note("mfaSettings", "new in v7; not set (the login pages' default factors)")

	out.SessionTime = DefaultSessionTime
	if params != nil {
		if err := m.loginParams(params, &out); err != nil {
			return out, err
		}
	}
	if out.SessionTime == DefaultSessionTime {
		m.note("sessionTime", "new in v7 init params; set to the default %d seconds (1 day)", DefaultSessionTime)
	}
	if err := out.Validate(); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			return out, &MigrationError{Field: prefix + fe.Field, Reason: strings.TrimPrefix(fe.Error(), "auth: "+fe.Field+": ")}
		}
		return out, err
	}
	return out, nil
}

func (m *migration) loginConfig(field string, raw json.RawMessage) (map[string]LoginConfig, error) {
	obj, err := m.object(field, raw)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(map[string]LoginConfig, len(obj))
	for _, k := range keys {
		f := field + "." + k
		var c LoginConfig
		if err := json.Unmarshal(obj[k], &c); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) && te.Field != "" {
				return nil, &MigrationError{Field: f + "." + te.Field, Reason: "has the wrong type"}
			}
			return nil, &MigrationError{Field: f, Reason: "must be a JSON object"}
		}
		switch {
		case c.Verifier == "":
			return nil, &MigrationError{Field: f + ".verifier", Reason: "is required"}
		case !c.TypeOfLogin.Valid():
			return nil, &MigrationError{Field: f + ".typeOfLogin", Reason: strconv.Quote(string(c.TypeOfLogin)) + " is not a login type"}
		case c.ClientID == "":
			return nil, &MigrationError{Field: f + ".clientId", Reason: "is required in v7 (the identity provider's client id); add it to the v6 file"}
		}
		out[k] = c
	}
	return out, nil
}

func (m *migration) whiteLabel(field string, raw json.RawMessage) (*WhiteLabelData, error) {
	obj, err := m.object(field, raw)
	if err != nil {
		return nil, err
	}
	m.unknown(field+".", obj, v6WhiteLabelKeys)
	var w WhiteLabelData
	str := func(key string) (string, bool, error) {
		raw, ok := obj[key]
		if !ok || string(raw) == "null" {
			return "", false, nil
		}
		s, err := decodeField[string](field+"."+key, raw, "a string")
		return s, true, err
	}
	name, ok, err := str("name")
	if err != nil {
		return nil, err
	}
	if ok {
		w.AppName = name
		m.note("whiteLabel.appName", "renamed from whiteLabel.name")
	}
	if w.LogoLight, _, err = str("logoLight"); err != nil {
		return nil, err
	}
	if w.LogoDark, _, err = str("logoDark"); err != nil {
		return nil, err
	}
	lang, ok, err := str("defaultLanguage")
	if err != nil {
		return nil, err
	}
	if ok {
		l, err := migrateLanguage(lang)
		if err != nil {
			return nil, &MigrationError{Field: field + ".defaultLanguage", Reason: err.Error()}
		}
		w.DefaultLanguage = l
		if string(l) == lang {
			m.note("whiteLabel.defaultLanguage", "string %q → Language %s", lang, l)
		} else {
			m.note("whiteLabel.defaultLanguage", "string %q → Language %s (v7 has no regional variants)", lang, l)
		}
	} else {
		m.note("whiteLabel.defaultLanguage", "not set; v7 default %s", English)
	}
	if raw, ok := obj["dark"]; ok && string(raw) != "null" {
		dark, err := decodeField[bool](field+".dark", raw, "a boolean")
		if err != nil {
			return nil, err
		}
		w.Mode = ModeLight
		if dark {
			w.Mode = ModeDark
		}
		m.note("whiteLabel.mode", "replaces whiteLabel.dark=%t → %q", dark, w.Mode)
	} else {
		m.note("whiteLabel.mode", "not set; v7 default %q (v6 without dark was light)", ModeAuto)
	}
	if raw, ok := obj["theme"]; ok && string(raw) != "null" {
		theme, how, err := migrateTheme(raw)
		if err != nil {
			return nil, &MigrationError{Field: field + ".theme", Reason: err.Error()}
		}
		w.Theme = theme
		if how != "" {
			m.note("whiteLabel.theme", "%s", how)
		}
	}
	if _, ok := w.Theme["primary"]; !ok {
		m.note("whiteLabel.theme", "no primary colour; v7 default primary = %s", DefaultPrimaryColor)
	}
	m.note("whiteLabel.appUrl", "new in v7; not set (default: the app's website URL)")
	m.note("whiteLabel.useLogoLoader", "new in v7; not set (default false)")
	return &w, nil
}

// migrateLanguage maps a v6 free-form language string to a v7 Language:
// case is ignored and a region ("en-US", "pt_BR") is dropped.
func migrateLanguage(s string) (Language, error) {
	base := strings.ToLower(strings.TrimSpace(s))
	if i := strings.IndexAny(base, "-_"); i > 0 {
		base = base[:i]
	}
	l := Language(base)
	if base == "" || !l.Valid() {
		return "", fmt.Errorf("%q is not supported by v7 (en, de, ja, ko, zh, es, fr, pt, nl)", s)
	}
	return l, nil
}

// migrateTheme turns the v6 theme into the v7 dictionary. v6 documents it
// as a pair: ["primary", "#hex"]; a list of pairs and an object (already a
// dictionary) are accepted too.
func migrateTheme(raw json.RawMessage) (map[string]string, string, error) {
	var dict map[string]string
	if err := json.Unmarshal(raw, &dict); err == nil && dict != nil {
		return dict, "", nil
	}
	var pair []string
	if err := json.Unmarshal(raw, &pair); err == nil {
		if len(pair) != 2 || pair[0] == "" {
			return nil, "", fmt.Errorf("a pair must be [name, colour], got %d elements", len(pair))
		}
		return map[string]string{pair[0]: pair[1]}, fmt.Sprintf("pair [%q, %q] → dictionary {%q: %q}", pair[0], pair[1], pair[0], pair[1]), nil
	}
	var pairs [][]string
	if err := json.Unmarshal(raw, &pairs); err == nil {
		out := make(map[string]string, len(pairs))
		for i, p := range pairs {
			if len(p) != 2 || p[0] == "" {
				return nil, "", fmt.Errorf("pair %d must be [name, colour]", i)
			}
			if _, dup := out[p[0]]; dup {
				return nil, "", fmt.Errorf("name %q appears twice", p[0])
			}
			out[p[0]] = p[1]
		}
		return out, fmt.Sprintf("%d pairs → dictionary", len(pairs)), nil
	}
	return nil, "", errors.New(`must be a pair ["name", "colour"], a list of pairs, or an object of strings`)
}

func (m *migration) loginParams(params map[string]json.RawMessage, out *InitParams) error {
	m.unknown("params.", params, v6LoginKeys)
	if raw, ok := params["sessionTime"]; ok && string(raw) != "null" {
		st, err := decodeField[int]("params.sessionTime", raw, "a whole number of seconds")
		if err != nil {
			return err
		}
		switch {
		case st <= 0:
			return &MigrationError{Field: "params.sessionTime", Reason: "must be a positive number of seconds"}
		case st > MaxSessionTime:
			out.SessionTime = MaxSessionTime
			m.note("sessionTime", "moved from login params; %d capped at %d seconds (7 days), as v6 did", st, MaxSessionTime)
		default:
			out.SessionTime = st
			m.note("sessionTime", "moved from login params (%d seconds)", st)
		}
	}
	var rest []string
	for k := range params {
		if k != "sessionTime" && contains(v6LoginKeys, k) {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		m.note("params."+k, "a login parameter, unchanged in v7; pass it to Login, not in the init params")
	}
	if raw, ok := params["extraLoginOptions"]; ok && string(raw) != "null" {
		m.note("params.extraLoginOptions.additionalParams", "new in v7; not set")
	}
	return nil
}
