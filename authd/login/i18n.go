package login

import (
	"embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/porticohq/portico/auth/authwire"
)

//go:embed i18n/*.json
var catalogFiles embed.FS

// catalogs are the pages' strings per language; English is complete and
// every other language has the same keys (a test checks it).
type catalogs map[authwire.Language]map[string]string

func loadCatalogs() (catalogs, error) {
	out := catalogs{}
	for _, l := range authwire.Languages() {
		b, err := catalogFiles.ReadFile("i18n/" + string(l) + ".json")
		if err != nil {
			return nil, fmt.Errorf("login: translations %s: %w", l, err)
		}
		m := map[string]string{}
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("login: translations %s: %w", l, err)
		}
		out[l] = m
	}
	return out, nil
}

// languageName is a language in its own words, for the switcher.
func languageName(l authwire.Language) string {
	switch l {
	case authwire.English:
		return "English"
	case authwire.German:
		return "Deutsch"
	case authwire.Japanese:
		return "日本語"
	case authwire.Korean:
		return "한국어"
	case authwire.Mandarin:
		return "中文"
	case authwire.Spanish:
		return "Español"
	case authwire.French:
		return "Français"
	case authwire.Portuguese:
		return "Português"
	case authwire.Dutch:
		return "Nederlands"
	}
	return string(l)
}

// translator looks strings up in one language and records missing keys.
type translator struct {
	lang    authwire.Language
	cat     map[string]string
	missing map[string]bool
}

// T returns the string for key; a missing key shows as [key] and is
// recorded.
func (t *translator) T(key string) string {
	if s, ok := t.cat[key]; ok && s != "" {
		return s
	}
	if t.missing != nil {
		t.missing[key] = true
	}
	return "[" + key + "]"
}

// TF returns the string for key with %s replaced by arg.
func (t *translator) TF(key, arg string) string {
	return strings.Replace(t.T(key), "%s", arg, 1)
}
