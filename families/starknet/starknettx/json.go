package starknettx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/holiman/uint256"
)

// ErrUnsupportedVersion: the transaction is not version 3 (nor its query
// version); a node answers the spec's UNSUPPORTED_TX_VERSION.
var ErrUnsupportedVersion = errors.New("the transaction version is not supported: want 0x3")

// FieldError is a malformed field of a transaction: Field is its JSON
// path within the transaction ("resource_bounds.l2_gas.max_amount").
type FieldError struct {
	Field  string
	Reason string
}

// Error names the field.
func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// MarshalJSON renders the spec's BROADCASTED_INVOKE_TXN (version 3).
func (t *Invoke) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"type":"INVOKE","sender_address":`)
	writeFelt(&b, &t.SenderAddress)
	b.WriteString(`,"calldata":`)
	writeFelts(&b, t.Calldata)
	b.WriteString(`,"account_deployment_data":`)
	writeFelts(&b, t.AccountDeploymentData)
	t.writeCommon(&b)
	return b.Bytes(), nil
}

// MarshalJSON renders the spec's BROADCASTED_DEPLOY_ACCOUNT_TXN (version 3).
func (t *DeployAccount) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"type":"DEPLOY_ACCOUNT","class_hash":`)
	writeFelt(&b, &t.ClassHash)
	b.WriteString(`,"contract_address_salt":`)
	writeFelt(&b, &t.ContractAddressSalt)
	b.WriteString(`,"constructor_calldata":`)
	writeFelts(&b, t.ConstructorCalldata)
	t.writeCommon(&b)
	return b.Bytes(), nil
}

// writeCommon writes the shared fields and the closing brace.
func (c *Common) writeCommon(b *bytes.Buffer) {
	v := c.Version()
	b.WriteString(`,"version":`)
	writeFelt(b, &v)
	b.WriteString(`,"signature":`)
	writeFelts(b, c.Signature)
	b.WriteString(`,"nonce":`)
	writeFelt(b, &c.Nonce)
	b.WriteString(`,"resource_bounds":{"l1_gas":`)
	writeBound(b, &c.ResourceBounds.L1Gas)
	b.WriteString(`,"l1_data_gas":`)
	writeBound(b, &c.ResourceBounds.L1DataGas)
	b.WriteString(`,"l2_gas":`)
	writeBound(b, &c.ResourceBounds.L2Gas)
	b.WriteString(`},"tip":"0x` + strconv.FormatUint(c.Tip, 16) + `","paymaster_data":`)
	writeFelts(b, c.PaymasterData)
	b.WriteString(`,"nonce_data_availability_mode":"` + c.NonceDAMode.String() + `","fee_data_availability_mode":"` + c.FeeDAMode.String() + `"}`)
}

// String is the mode's name in the spec, "L1" or "L2".
func (m DAMode) String() string {
	if m == DAModeL2 {
		return "L2"
	}
	return "L1"
}

func writeFelt(b *bytes.Buffer, f *Felt) {
	b.WriteString(`"0x`)
	b.WriteString(f.Text(16))
	b.WriteByte('"')
}

func writeFelts(b *bytes.Buffer, fs []Felt) {
	b.WriteByte('[')
	for i := range fs {
		if i > 0 {
			b.WriteByte(',')
		}
		writeFelt(b, &fs[i])
	}
	b.WriteByte(']')
}

func writeBound(b *bytes.Buffer, r *ResourceBound) {
	b.WriteString(`{"max_amount":"0x` + strconv.FormatUint(r.MaxAmount, 16) + `","max_price_per_unit":"` + r.MaxPricePerUnit.Hex() + `"}`)
}

// DecodeInvoke reads a BROADCASTED_INVOKE_TXN. A malformed field is a
// *FieldError; a version other than 3 is ErrUnsupportedVersion. It takes
// what Portico's wallet sends and its devnet runs, and says so by field
// for the rest: L1 data availability only, no paymaster data, no account
// deployment data (accounts are deployed by DEPLOY_ACCOUNT).
func DecodeInvoke(raw []byte) (*Invoke, error) {
	f, err := newFields(raw, "INVOKE")
	if err != nil {
		return nil, err
	}
	t := &Invoke{}
	t.SenderAddress = f.felt("sender_address")
	t.Calldata = f.felts("calldata", true)
	t.AccountDeploymentData = f.felts("account_deployment_data", false)
	if err := f.common(&t.Common); err != nil {
		return nil, err
	}
	if len(t.AccountDeploymentData) > 0 && f.err == nil {
		f.fail("account_deployment_data", "must be empty: the devnet deploys accounts with DEPLOY_ACCOUNT only")
	}
	return t, f.done()
}

// DecodeDeployAccount reads a BROADCASTED_DEPLOY_ACCOUNT_TXN, as
// DecodeInvoke does.
func DecodeDeployAccount(raw []byte) (*DeployAccount, error) {
	f, err := newFields(raw, "DEPLOY_ACCOUNT")
	if err != nil {
		return nil, err
	}
	t := &DeployAccount{}
	t.ClassHash = f.felt("class_hash")
	t.ContractAddressSalt = f.felt("contract_address_salt")
	t.ConstructorCalldata = f.felts("constructor_calldata", true)
	if err := f.common(&t.Common); err != nil {
		return nil, err
	}
	return t, f.done()
}

// fields decodes one transaction object, keeping the first error.
type fields struct {
	m   map[string]json.RawMessage
	err error
}

func newFields(raw []byte, kind string) (*fields, error) {
	f := &fields{}
	if err := json.Unmarshal(raw, &f.m); err != nil || f.m == nil {
		return nil, &FieldError{Field: "", Reason: "want a transaction object"}
	}
	if typ := f.str("type", true); f.err == nil && typ != kind {
		f.fail("type", fmt.Sprintf("want %q, got %q", kind, typ))
	}
	return f, f.err
}

func (f *fields) fail(field, reason string) {
	if f.err == nil {
		f.err = &FieldError{Field: field, Reason: reason}
	}
}

func (f *fields) done() error { return f.err }

// str reads a string member.
func (f *fields) str(name string, required bool) string {
	raw, ok := f.m[name]
	if !ok {
		if required {
			f.fail(name, "missing; it is required")
		}
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		f.fail(name, "want a string")
	}
	return s
}

// felt reads a required felt member.
func (f *fields) felt(name string) Felt {
	s := f.str(name, true)
	if f.err != nil {
		return Felt{}
	}
	v, err := ParseFelt(s)
	if err != nil {
		f.fail(name, err.Error())
	}
	return v
}

// maxFelts bounds calldata, signatures and the like (a node's own bound is
// a few thousand; the devnet's body limit is the real one).
const maxFelts = 4096

// felts reads an array of felts; absent is empty unless required.
func (f *fields) felts(name string, required bool) []Felt {
	raw, ok := f.m[name]
	if !ok {
		if required {
			f.fail(name, "missing; it is required")
		}
		return nil
	}
	var ss []string
	if err := json.Unmarshal(raw, &ss); err != nil {
		f.fail(name, "want an array of felts")
		return nil
	}
	if len(ss) > maxFelts {
		f.fail(name, fmt.Sprintf("more than %d felts", maxFelts))
		return nil
	}
	out := make([]Felt, len(ss))
	for i, s := range ss {
		v, err := ParseFelt(s)
		if err != nil {
			f.fail(fmt.Sprintf("%s[%d]", name, i), err.Error())
			return nil
		}
		out[i] = v
	}
	return out
}

// hexUint reads a "0x…" member of at most bits bits.
func (f *fields) hexUint(name string, raw json.RawMessage, bits int) *uint256.Int {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		f.fail(name, "want a hex string")
		return nil
	}
	h, ok := strings.CutPrefix(s, "0x")
	if !ok || h == "" || len(h) > 64 {
		f.fail(name, fmt.Sprintf("want 0x and hex digits, got %q", s))
		return nil
	}
	v, err := uint256.FromHex("0x" + trimZeros(h))
	if err != nil || v.BitLen() > bits {
		f.fail(name, fmt.Sprintf("want a u%d in hex, got %q", bits, s))
		return nil
	}
	return v
}

// trimZeros drops leading zeros, keeping one digit (uint256.FromHex wants
// no leading zeros).
func trimZeros(h string) string {
	t := strings.TrimLeft(h, "0")
	if t == "" {
		return "0"
	}
	return t
}

// common reads the fields every v3 transaction has. A version that is not
// 3 returns ErrUnsupportedVersion at once.
func (f *fields) common(c *Common) error {
	ver := f.felt("version")
	if f.err != nil {
		return f.err
	}
	switch {
	case ver.Equal(&Version3):
	case ver.Equal(&QueryVersion3):
		c.Query = true
	default:
		return ErrUnsupportedVersion
	}
	c.Signature = f.felts("signature", true)
	c.Nonce = f.felt("nonce")
	if raw, ok := f.m["resource_bounds"]; !ok {
		f.fail("resource_bounds", "missing; it is required")
	} else {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil || m == nil {
			f.fail("resource_bounds", "want an object with l1_gas, l1_data_gas and l2_gas")
		}
		for _, r := range []struct {
			name string
			b    *ResourceBound
		}{{"l1_gas", &c.ResourceBounds.L1Gas}, {"l1_data_gas", &c.ResourceBounds.L1DataGas}, {"l2_gas", &c.ResourceBounds.L2Gas}} {
			f.bound("resource_bounds."+r.name, m[r.name], r.b)
		}
	}
	if raw, ok := f.m["tip"]; ok {
		if v := f.hexUint("tip", raw, 64); v != nil {
			c.Tip = v.Uint64()
		}
	}
	c.PaymasterData = f.felts("paymaster_data", false)
	if len(c.PaymasterData) > 0 && f.err == nil {
		f.fail("paymaster_data", "must be empty: the devnet has no paymaster")
	}
	c.NonceDAMode = f.daMode("nonce_data_availability_mode")
	c.FeeDAMode = f.daMode("fee_data_availability_mode")
	return f.err
}

func (f *fields) bound(name string, raw json.RawMessage, b *ResourceBound) {
	if raw == nil {
		f.fail(name, "missing; it is required")
		return
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		f.fail(name, "want an object with max_amount and max_price_per_unit")
		return
	}
	for _, k := range []string{"max_amount", "max_price_per_unit"} {
		if _, ok := m[k]; !ok {
			f.fail(name+"."+k, "missing; it is required")
			return
		}
	}
	if v := f.hexUint(name+".max_amount", m["max_amount"], 64); v != nil {
		b.MaxAmount = v.Uint64()
	}
	if v := f.hexUint(name+".max_price_per_unit", m["max_price_per_unit"], 128); v != nil {
		b.MaxPricePerUnit = *v
	}
}

func (f *fields) daMode(name string) DAMode {
	switch s := f.str(name, false); s {
	case "", "L1":
		return DAModeL1
	case "L2":
		f.fail(name, "L2 data availability is not supported: want \"L1\"")
	default:
		f.fail(name, fmt.Sprintf("want \"L1\" or \"L2\", got %q", s))
	}
	return DAModeL1
}
