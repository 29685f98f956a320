package keynet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/porticohq/portico/auth/eccrypto"
	"github.com/porticohq/portico/authd/idtoken"
)

// NetworkFile is a network whose nodes run as separate processes
// (`portico auth node`), as the one JSON file its nodes and clients
// share: the node set, the verifiers every node trusts and the nodes'
// timeouts. It is a NodeConfig without the two things that differ per
// node and must not be shared, the index and the signing key; NodeConfig
// adds them.
//
//	{
//	  "network": {"name": "sapphire_devnet", "nodes": [
//	    {"index": 1, "url": "http://127.0.0.1:8561/", "publicKey": "04…"}, …]},
//	  "verifiers": [{"verifier": "my-jwt", "typeOfLogin": "jwt",
//	    "jwksUrl": "https://issuer.example/.well-known/jwks.json",
//	    "issuer": "https://issuer.example", "audience": ["my-app"]}],
//	  "dkgTimeout": "30s"
//	}
type NetworkFile struct {
	// Network is the node set, every node with its index, URL and public key.
	Network NetworkConfig `json:"network"`
	// Verifiers are the id token verifiers every node trusts.
	Verifiers []idtoken.Config `json:"verifiers"`
	// CommitmentTTL, DKGTimeout and TokenMemory are NodeConfig's; the
	// NodeConfig defaults when zero or absent.
	CommitmentTTL Duration `json:"commitmentTTL,omitzero"`
	DKGTimeout    Duration `json:"dkgTimeout,omitzero"`
	TokenMemory   Duration `json:"tokenMemory,omitzero"`
}

// Duration is a time.Duration written in JSON as a Go duration string
// ("30s", "5m", "24h").
type Duration time.Duration

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// errDuration names the fields a bad duration can be in: encoding/json
// does not say which field an UnmarshalJSON error comes from.
var errDuration = errors.New(`commitmentTTL, dkgTimeout, tokenMemory: want a duration string such as "30s"`)

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errDuration
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%w: %w", errDuration, err)
	}
	*d = Duration(v)
	return nil
}

// NodeConfig is the config of the node with this index, signing with key.
func (f *NetworkFile) NodeConfig(index int, key *secp256k1.PrivateKey) NodeConfig {
	hexKey := ""
	if key != nil {
		hexKey = eccrypto.PrivateKeyHex(key)
	}
	return NodeConfig{
		Network: f.Network, Index: index, SigningKey: hexKey, Verifiers: slices.Clone(f.Verifiers),
		CommitmentTTL: time.Duration(f.CommitmentTTL), DKGTimeout: time.Duration(f.DKGTimeout), TokenMemory: time.Duration(f.TokenMemory),
	}
}

// Validate checks the file and names the first bad field by its path in
// the file ("network.nodes[2].url", "verifiers[0].issuer").
func (f *NetworkFile) Validate() error {
	if err := f.Network.Validate(); err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) {
			field := ce.Field
			if field == "network" {
				field = "name"
			}
			return &ConfigError{Field: "network." + field, Reason: ce.Reason}
		}
		return err
	}
	if !slices.Contains(Networks(), f.Network.Name) {
		return &ConfigError{Field: "network.name", Reason: fmt.Sprintf("unknown network %q (want one of %s)", f.Network.Name, strings.Join(Networks(), ", "))}
	}
	urls, keys := map[string]int{}, map[string]int{}
	for i, p := range f.Network.Nodes {
		u := strings.TrimRight(p.URL, "/")
		if j, dup := urls[u]; dup {
			return &ConfigError{Field: fmt.Sprintf("network.nodes[%d].url", i), Reason: fmt.Sprintf("same as network.nodes[%d].url", j)}
		}
		urls[u] = i
		pub, _ := eccrypto.ParsePublicKeyHex(p.PublicKey) // checked by Network.Validate
		k := string(pub.SerializeCompressed())
		if j, dup := keys[k]; dup {
			return &ConfigError{Field: fmt.Sprintf("network.nodes[%d].publicKey", i), Reason: fmt.Sprintf("same as network.nodes[%d].publicKey: each node needs its own key", j)}
		}
		keys[k] = i
	}
	if len(f.Verifiers) == 0 {
		return &ConfigError{Field: "verifiers", Reason: "empty: the nodes need at least one id token verifier to accept logins"}
	}
	names := map[string]int{}
	for i, v := range f.Verifiers {
		if err := v.Validate(); err != nil {
			var ce *idtoken.ConfigError
			if errors.As(err, &ce) {
				return &ConfigError{Field: fmt.Sprintf("verifiers[%d].%s", i, ce.Field), Reason: ce.Reason}
			}
			return &ConfigError{Field: fmt.Sprintf("verifiers[%d]", i), Reason: err.Error()}
		}
		if j, dup := names[v.Verifier]; dup {
			return &ConfigError{Field: fmt.Sprintf("verifiers[%d].verifier", i), Reason: fmt.Sprintf("%q is also verifiers[%d]", v.Verifier, j)}
		}
		names[v.Verifier] = i
	}
	for name, d := range map[string]Duration{"commitmentTTL": f.CommitmentTTL, "dkgTimeout": f.DKGTimeout, "tokenMemory": f.TokenMemory} {
		if d < 0 {
			return &ConfigError{Field: name, Reason: "must not be negative"}
		}
	}
	return nil
}

// Marshal writes the file as indented JSON.
func (f *NetworkFile) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// LoadNetworkFile reads and validates a network file. ${NAME} in it is
// replaced by the environment variable NAME (an unset one is an error).
func LoadNetworkFile(path string) (*NetworkFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("keynet: network file: %w", err)
	}
	f, err := ParseNetworkFile(b, os.LookupEnv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// ParseNetworkFile decodes and validates a network file. ${NAME} is
// replaced by lookup(NAME); unknown fields and trailing data are errors.
func ParseNetworkFile(data []byte, lookup func(string) (string, bool)) (*NetworkFile, error) {
	var missing []string
	data = envRef.ReplaceAllFunc(data, func(m []byte) []byte {
		name := string(envRef.FindSubmatch(m)[1])
		v, ok := lookup(name)
		if !ok {
			missing = append(missing, name)
		}
		// The value lands inside a JSON string: escape it as one.
		q, _ := json.Marshal(v)
		return q[1 : len(q)-1]
	})
	if len(missing) > 0 {
		return nil, &ConfigError{Field: "${" + missing[0] + "}", Reason: "environment variable not set"}
	}
	var f NetworkFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, jsonError(data, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, &ConfigError{Field: "file", Reason: "trailing data after the JSON object"}
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return &f, nil
}

// jsonError names where a decoding error is: the field path for a wrong
// type, the line and column for bad syntax.
func jsonError(data []byte, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return &ConfigError{Field: te.Field, Reason: fmt.Sprintf("want %s, not a JSON %s", te.Type, te.Value)}
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		// Offset counts the bytes read, the offending one included.
		line, col := position(data, se.Offset-1)
		return &ConfigError{Field: fmt.Sprintf("line %d column %d", line, col), Reason: se.Error()}
	}
	if errors.Is(err, io.EOF) {
		return &ConfigError{Field: "file", Reason: "empty"}
	}
	// Unknown fields ("json: unknown field \"x\"") and errors from
	// UnmarshalJSON methods, which name no field of their own.
	return &ConfigError{Field: "file", Reason: strings.TrimPrefix(err.Error(), "json: ")}
}

// position is the 1-based line and column of the byte at offset.
func position(data []byte, offset int64) (line, col int) {
	offset = min(max(offset, 0), int64(len(data)))
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(offset) - bytes.LastIndexByte(before, '\n')
	return line, col
}
