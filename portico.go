// Package portico holds the domain types shared by Portico's pieces: the rows
// of a chain family's method table, API key identities, and the gateway's own
// errors. Subpackages implement the pieces; cmd/portico wires them together.
package portico

import (
	"github.com/go-json-experiment/json/jsontext"
)

// Family names a chain family. Each family has one method table and is served
// on its own host.
type Family string

// The chain families Portico serves.
const (
	FamilySolana   Family = "solana"
	FamilyEVM      Family = "evm"
	FamilyStarknet Family = "starknet"
)

// Families lists every supported family, in a stable order.
var Families = []Family{FamilySolana, FamilyEVM, FamilyStarknet}

// Valid reports whether f is a known family.
func (f Family) Valid() bool {
	for _, g := range Families {
		if f == g {
			return true
		}
	}
	return false
}

// Method is one row of a family's method table: everything the gateway needs
// to know about a method lives here, so adding a method is adding a row.
type Method struct {
	// Name is the method's name on real nodes; it is what is sent upstream.
	Name string
	// Aliases are other names clients may use, such as the seed's neutral
	// stand-ins (evm_getProof for eth_getProof).
	Aliases []string
	// Params checks the params of a call and returns the params to send
	// upstream, which may differ where the gateway applies its own rule (a
	// default the seed fixes, say). Errors are *ParamsError. A nil Params
	// forwards any array or object, or no params, unchanged.
	Params func(params jsontext.Value) (jsontext.Value, error)
	// Cost is the method's default credit cost.
	Cost int
	// Cacheable reports whether a result can never change for these params
	// (a block addressed by hash, a finalized slot), so it may be served from
	// cache. nil means never cache.
	Cacheable func(params, result jsontext.Value) bool
}

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
	// Forward is the default allowlist: methods with no row of their own
	// that are forwarded unchanged at DefaultCost. Config may replace it.
	Forward []string
	// AliasPrefixes maps a stand-in prefix to the real one, so that every
	// method of the family answers under both names: evm_chainId is
	// eth_chainId when AliasPrefixes is {"evm_": "eth_"}.
	AliasPrefixes map[string]string
}
