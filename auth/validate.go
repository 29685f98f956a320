package auth

import (
	"net/url"
	"strings"
)

// ParseInitParams decodes init params from the Swift SDK's JSON and
// validates them. Unknown keys are ignored, as Codable does.
func ParseInitParams(data []byte) (InitParams, error) {
	var p InitParams
	if err := decodeJSON(data, &p); err != nil {
		return InitParams{}, err
	}
	return p, p.Validate()
}

// checkHTTPURL is the check InitParams.Validate applies to sdkUrl, for the
// URLs the SDK takes besides the init params (the session server) and for
// the migration.
func checkHTTPURL(field, s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &FieldError{Field: field, Value: s, Reason: "is not an http(s) URL"}
	}
	return nil
}

// joinNetworks lists the networks for error messages.
func joinNetworks() string {
	names := make([]string, 0, len(Networks()))
	for _, n := range Networks() {
		names = append(names, string(n))
	}
	return strings.Join(names, ", ")
}
