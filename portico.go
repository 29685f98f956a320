// Package portico holds the domain types shared by Portico's pieces: the rows
// of a chain family's method table, what a params rule learns from a call,
// and the gateway's own errors and their codes. Subpackages implement the
// pieces (API key identities live in apikey); cmd/portico wires them
// together.
package portico

import (
	"github.com/go-json-experiment/json/jsontext"
)

// Family names a chain family, such as "evm". Each family has one method
// table, is served on hosts of its own, and is registered with its
// embedded devnet in package families.
type Family string

// Method is one row of a family's method table: everything the gateway needs
// to know about a method lives here, so adding a method is adding a row.
type Method struct {
	// Name is the method's name on real nodes; it is what is sent upstream.
	Name string
	// Aliases are other names clients may use, such as the seed's neutral
	// stand-ins (evm_getProof for eth_getProof).
	Aliases []string
	// Params checks the params of a call, scanning them once, and returns
	// what later steps need: the params to send upstream (which may
	// differ where the gateway applies its own rule, a default the seed
	// fixes, say) and whether the answer may be cached. Errors are
	// *ParamsError. A nil Params forwards any array or object, or no
	// params, unchanged, and its answers are never cached.
	Params func(params jsontext.Value) (Params, error)
	// Cost is the method's default credit cost.
	Cost int
}

// Params is what a method's params rule learned from a call's params.
type Params struct {
	// Send is the params to send upstream.
	Send jsontext.Value
	// Cache says whether a non-null answer may be served from cache.
	Cache Cacheability
}

// Cacheability says whether an answer may be served from cache. Only a
// family's params rule decides it, from what the call addresses; a null
// answer (a transaction or block that may still appear) is never cached.
type Cacheability uint8

// How answers may be cached.
const (
	// NotCacheable answers are always asked of a node.
	NotCacheable Cacheability = iota
	// Immutable answers can never change for these params: the call names
	// its block by hash, or asks for finalized data only.
	Immutable
)

// Table is a family's method table.
type Table struct {
	// Family is the family the table serves.
	Family Family
	// Methods are the methods with their own rules; the seed's methods have
	// full params validation.
	Methods []Method
	// DefaultCost is the credit cost of allowlisted methods with no row of
	// their own.
	DefaultCost int
	// DefaultAllow is the default allowlist: methods with no row of their
	// own that are forwarded unchanged at DefaultCost. A network's config
	// may replace it.
	DefaultAllow []string
	// NamePattern is a regular expression that every method name of the
	// family matches (an allowlist in config is checked against it).
	NamePattern string
	// AliasPrefixes maps a stand-in prefix to the real one, so that every
	// method of the family answers under both names: evm_chainId is
	// eth_chainId when AliasPrefixes is {"evm_": "eth_"}.
	AliasPrefixes map[string]string
}
