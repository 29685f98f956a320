package solanadevnet

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/mr-tron/base58"

	"github.com/porticohq/portico/families/rpcparams"
)

// subMethod answers a method that needs the call's connection.
type subMethod func(d *Devnet, ctx context.Context, params jsontext.Value) (any, error)

// pubsubMethods are the subscribe methods, with the kind each starts.
// Each has an unsubscribe method, named with Unsubscribe.
var pubsubMethods = map[string]subKind{
	"slotSubscribe":      subSlot,
	"rootSubscribe":      subRoot,
	"accountSubscribe":   subAccount,
	"programSubscribe":   subProgram,
	"logsSubscribe":      subLogs,
	"signatureSubscribe": subSignature,
	"blockSubscribe":     subBlock,
}

// specParsers read each kind's params.
var specParsers = [...]func(params jsontext.Value) (subSpec, error){
	subSlot:      noParamsSpec(subSlot),
	subRoot:      noParamsSpec(subRoot),
	subAccount:   accountSpec,
	subProgram:   programSpec,
	subLogs:      logsSpec,
	subSignature: signatureSpec,
	subBlock:     blockSpec,
}

// lookupSub returns the PubSub method serving name, or nil.
func lookupSub(name string) subMethod {
	if base, ok := strings.CutSuffix(name, "Unsubscribe"); ok {
		if _, ok := pubsubMethods[base+"Subscribe"]; ok {
			return (*Devnet).unsubscribe
		}
		return nil
	}
	kind, ok := pubsubMethods[name]
	if !ok {
		return nil
	}
	return func(d *Devnet, ctx context.Context, params jsontext.Value) (any, error) {
		spec, err := specParsers[kind](params)
		if err != nil {
			return nil, err
		}
		return d.subscribe(ctx, spec)
	}
}

func noParamsSpec(kind subKind) func(jsontext.Value) (subSpec, error) {
	return func(params jsontext.Value) (subSpec, error) {
		if err := noParams(params); err != nil {
			return subSpec{}, err
		}
		return subSpec{kind: kind, canon: fmt.Sprint(kind)}, nil
	}
}

// accountEncodings are UiAccountEncoding's values.
var accountEncodings = []string{"base58", "base64", "base64+zstd", "jsonParsed", "binary"}

// accountOptions reads what accountSubscribe and programSubscribe share
// with getAccountInfo: encoding (default binary, as agave), dataSlice,
// commitment (default finalized) and minContextSlot (checked, then
// ignored, as agave ignores it for subscriptions).
func accountOptions(cfg map[string]jsontext.Value, spec *subSpec) (err error) {
	spec.encoding = "binary"
	if v, ok := cfg["encoding"]; ok && v.Kind() != 'n' {
		if spec.encoding, err = rpcparams.Enum(v, 2, "config.encoding", accountEncodings...); err != nil {
			return err
		}
	}
	if spec.slice, err = dataSliceParam(cfg, 2); err != nil {
		return err
	}
	if spec.level, err = commitmentOf(cfg, 2, "config", processed); err != nil {
		return err
	}
	return minContextSlot(cfg, 2, "config", rpcparams.MaxUint64)
}

// accountSpec reads accountSubscribe's [pubkey, config?].
func accountSpec(params jsontext.Value) (subSpec, error) {
	spec := subSpec{kind: subAccount}
	p, err := positional(params, 1, "pubkey", "config")
	if err != nil {
		return spec, err
	}
	if spec.key, err = pubkeyParam(p[0], 1, "pubkey"); err != nil {
		return spec, err
	}
	cfg, err := config(p, 1, "config")
	if err != nil {
		return spec, err
	}
	if err := accountOptions(cfg, &spec); err != nil {
		return spec, err
	}
	spec.canon = fmt.Sprintf("%d %s %d %s %v", spec.kind, spec.key, spec.level, spec.encoding, sliceCanon(spec.slice))
	return spec, nil
}

// programSpec reads programSubscribe's [programId, config?]: the account
// options and filters (at most 4), withContext and sortResults (checked;
// notifications always carry their context).
func programSpec(params jsontext.Value) (subSpec, error) {
	spec := subSpec{kind: subProgram}
	p, err := positional(params, 1, "programId", "config")
	if err != nil {
		return spec, err
	}
	if spec.key, err = pubkeyParam(p[0], 1, "programId"); err != nil {
		return spec, err
	}
	cfg, err := config(p, 1, "config")
	if err != nil {
		return spec, err
	}
	if err := accountOptions(cfg, &spec); err != nil {
		return spec, err
	}
	for _, f := range []string{"withContext", "sortResults"} {
		if v, ok := cfg[f]; ok && v.Kind() != 'n' {
			if _, err := rpcparams.Bool(v, 2, "config."+f); err != nil {
				return spec, err
			}
		}
	}
	if spec.filters, err = filtersParam(cfg); err != nil {
		return spec, err
	}
	var fs []string
	for _, f := range spec.filters {
		fs = append(fs, f.canon())
	}
	spec.canon = fmt.Sprintf("%d %s %d %s %v [%s]", spec.kind, spec.key, spec.level, spec.encoding, sliceCanon(spec.slice), strings.Join(fs, " "))
	return spec, nil
}

func sliceCanon(s *dataSlice) string {
	if s == nil {
		return "-"
	}
	return fmt.Sprintf("%d+%d", s.offset, s.length)
}

// logsSpec reads logsSubscribe's [filter, config?]: filter "all",
// "allWithVotes" or {"mentions": [one address]}.
func logsSpec(params jsontext.Value) (subSpec, error) {
	spec := subSpec{kind: subLogs}
	p, err := positional(params, 1, "filter", "config")
	if err != nil {
		return spec, err
	}
	const want = `want "all", "allWithVotes" or {"mentions": [address]}`
	switch p[0].Kind() {
	case '"':
		s, err := rpcparams.Enum(p[0], 1, "filter", "all", "allWithVotes")
		if err != nil {
			return spec, err
		}
		spec.votes = s == "allWithVotes"
	case '{':
		obj, err := rpcparams.Object(p[0], 1, "filter", "mentions")
		if err != nil {
			return spec, err
		}
		v, ok := obj["mentions"]
		if !ok {
			return spec, rpcparams.Errorf(1, "filter", "%s, got an empty object", want)
		}
		list, err := rpcparams.Array(v, 1, "filter.mentions")
		if err != nil {
			return spec, err
		}
		for i, k := range list {
			if k.Kind() != '"' {
				return spec, rpcparams.Errorf(1, rpcparams.Index("filter.mentions", i), "want a string, got %s", rpcparams.Describe(k))
			}
		}
		if len(list) != 1 {
			return spec, invalidParams("Invalid Request: Only 1 address supported")
		}
		if spec.key, err = pubkeyParam(list[0], 1, "filter.mentions[0]"); err != nil {
			return spec, err
		}
		spec.mentions = true
	default:
		return spec, rpcparams.Errorf(1, "filter", "%s, got %s", want, rpcparams.Describe(p[0]))
	}
	cfg, err := config(p, 1, "config")
	if err != nil {
		return spec, err
	}
	if spec.level, err = commitmentOf(cfg, 2, "config", processed); err != nil {
		return spec, err
	}
	spec.canon = fmt.Sprintf("%d %v %v %s %d", spec.kind, spec.votes, spec.mentions, spec.key, spec.level)
	return spec, nil
}

// signatureSpec reads signatureSubscribe's [signature, config?].
func signatureSpec(params jsontext.Value) (subSpec, error) {
	spec := subSpec{kind: subSignature}
	p, err := positional(params, 1, "signature", "config")
	if err != nil {
		return spec, err
	}
	if spec.sig, err = signatureParam(p[0], 1, "signature"); err != nil {
		return spec, err
	}
	cfg, err := config(p, 1, "config")
	if err != nil {
		return spec, err
	}
	if spec.level, err = commitmentOf(cfg, 2, "config", processed); err != nil {
		return spec, err
	}
	if v, ok := cfg["enableReceivedNotification"]; ok && v.Kind() != 'n' {
		if spec.received, err = rpcparams.Bool(v, 2, "config.enableReceivedNotification"); err != nil {
			return spec, err
		}
	}
	spec.canon = fmt.Sprintf("%d %s %d %v", spec.kind, spec.sig, spec.level, spec.received)
	return spec, nil
}

// blockSpec reads blockSubscribe's [filter, config?]: filter "all" or
// {"mentionsAccountOrProgram": address}; the config's options are checked
// by getBlock's rules, with agave's blockSubscribe defaults (base64, full,
// showRewards false, finalized).
func blockSpec(params jsontext.Value) (subSpec, error) {
	spec := subSpec{kind: subBlock}
	p, err := positional(params, 1, "filter", "config")
	if err != nil {
		return spec, err
	}
	switch p[0].Kind() {
	case '"':
		if _, err := rpcparams.Enum(p[0], 1, "filter", "all"); err != nil {
			return spec, err
		}
	case '{':
		obj, err := rpcparams.Object(p[0], 1, "filter", "mentionsAccountOrProgram")
		if err != nil {
			return spec, err
		}
		v, ok := obj["mentionsAccountOrProgram"]
		if !ok {
			return spec, rpcparams.Errorf(1, "filter", `want "all" or {"mentionsAccountOrProgram": address}, got an empty object`)
		}
		if spec.key, err = pubkeyParam(v, 1, "filter.mentionsAccountOrProgram"); err != nil {
			return spec, err
		}
		spec.mentions = true
	default:
		return spec, rpcparams.Errorf(1, "filter", `want "all" or {"mentionsAccountOrProgram": address}, got %s`, rpcparams.Describe(p[0]))
	}
	cfg, err := config(p, 1, "config")
	if err != nil {
		return spec, err
	}
	o := encodeOpts{encoding: "base64", details: "full", maxVersion: -1}
	if err := txOptions(cfg, 2, &o); err != nil {
		return spec, err
	}
	if v, ok := cfg["transactionDetails"]; ok && v.Kind() != 'n' {
		if o.details, err = rpcparams.Enum(v, 2, "config.transactionDetails", "full", "accounts", "signatures", "none"); err != nil {
			return spec, err
		}
	}
	if v, ok := cfg["showRewards"]; ok && v.Kind() != 'n' {
		if o.rewards, err = rpcparams.Bool(v, 2, "config.showRewards"); err != nil {
			return spec, err
		}
	}
	if spec.level, err = commitmentOf(cfg, 2, "config", processed); err != nil {
		return spec, err
	}
	spec.block = o
	spec.canon = fmt.Sprintf("%d %v %s %d %+v", spec.kind, spec.mentions, spec.key, spec.level, o)
	return spec, nil
}

// accountFilter is one of programSubscribe's filters (agave's
// RpcFilterType): dataSize, memcmp or tokenAccountState.
type accountFilter struct {
	kind   string
	size   uint64 // dataSize
	offset uint64 // memcmp
	bytes  []byte // memcmp
}

// maxFilters is agave's MAX_GET_PROGRAM_ACCOUNT_FILTERS; maxMemcmpBytes,
// maxMemcmpBase58 and maxMemcmpBase64 bound a memcmp filter's bytes
// (MAX_DATA_SIZE and its encoded forms).
const (
	maxFilters      = 4
	maxMemcmpBytes  = 128
	maxMemcmpBase58 = 175
	maxMemcmpBase64 = 172
)

// filtersParam reads config.filters. Agave's own messages are kept where
// it has them (programSubscribe prefixes them with "Invalid params: ").
func filtersParam(cfg map[string]jsontext.Value) ([]accountFilter, error) {
	v, ok := cfg["filters"]
	if !ok || v.Kind() == 'n' {
		return nil, nil
	}
	list, err := rpcparams.Array(v, 2, "config.filters")
	if err != nil {
		return nil, err
	}
	if len(list) > maxFilters {
		return nil, invalidParams("Invalid params: Too many filters provided; max %d", maxFilters)
	}
	out := make([]accountFilter, len(list))
	for i, fv := range list {
		field := rpcparams.Index("config.filters", i)
		if fv.Kind() == '"' {
			if _, err := rpcparams.Enum(fv, 2, field, "tokenAccountState"); err != nil {
				return nil, err
			}
			out[i] = accountFilter{kind: "tokenAccountState"}
			continue
		}
		obj, err := rpcparams.Object(fv, 2, field, "dataSize", "memcmp")
		if err != nil {
			return nil, err
		}
		if len(obj) != 1 {
			return nil, rpcparams.Errorf(2, field, `want one of {"dataSize": n}, {"memcmp": {offset, bytes, encoding?}} or "tokenAccountState"`)
		}
		if sv, ok := obj["dataSize"]; ok {
			n, err := rpcparams.Uint(sv, 2, field+".dataSize", rpcparams.MaxUint64)
			if err != nil {
				return nil, err
			}
			out[i] = accountFilter{kind: "dataSize", size: n}
			continue
		}
		if out[i], err = memcmpParam(obj["memcmp"], field+".memcmp"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// memcmpParam reads a memcmp filter: offset, bytes (a base58 string by
// default, base64 with encoding "base64", or an array of bytes).
func memcmpParam(v jsontext.Value, field string) (accountFilter, error) {
	f := accountFilter{kind: "memcmp"}
	obj, err := rpcparams.Object(v, 2, field, "offset", "bytes", "encoding")
	if err != nil {
		return f, err
	}
	ov, ok := obj["offset"]
	if !ok {
		return f, rpcparams.Errorf(2, field+".offset", "missing")
	}
	if f.offset, err = rpcparams.Uint(ov, 2, field+".offset", rpcparams.MaxUint64); err != nil {
		return f, err
	}
	bv, ok := obj["bytes"]
	if !ok {
		return f, rpcparams.Errorf(2, field+".bytes", "missing")
	}
	enc := "base58"
	if ev, ok := obj["encoding"]; ok && ev.Kind() != 'n' {
		if enc, err = rpcparams.Enum(ev, 2, field+".encoding", "base58", "base64", "bytes", "binary"); err != nil {
			return f, err
		}
	}
	tooLarge := invalidParams("Invalid params: Invalid param: DataTooLarge")
	if bv.Kind() == '[' {
		list, err := rpcparams.Array(bv, 2, field+".bytes")
		if err != nil {
			return f, err
		}
		for i, x := range list {
			n, err := rpcparams.Uint(x, 2, rpcparams.Index(field+".bytes", i), 255)
			if err != nil {
				return f, err
			}
			f.bytes = append(f.bytes, byte(n))
		}
		if len(f.bytes) > maxMemcmpBytes {
			return f, tooLarge
		}
		return f, nil
	}
	s, err := rpcparams.String(bv, 2, field+".bytes")
	if err != nil {
		return f, rpcparams.Errorf(2, field+".bytes", "want a string or an array of bytes, got %s", rpcparams.Describe(bv))
	}
	if enc == "base64" {
		if len(s) > maxMemcmpBase64 {
			return f, tooLarge
		}
		if f.bytes, err = base64.StdEncoding.DecodeString(s); err != nil {
			return f, rpcparams.Errorf(2, field+".bytes", "want base64, got %s", rpcparams.Describe(bv))
		}
	} else {
		if len(s) > maxMemcmpBase58 {
			return f, tooLarge
		}
		if f.bytes, err = base58.Decode(s); err != nil {
			return f, rpcparams.Errorf(2, field+".bytes", "want base58, got %s", rpcparams.Describe(bv))
		}
	}
	if len(f.bytes) > maxMemcmpBytes {
		return f, tooLarge
	}
	return f, nil
}

func (f accountFilter) canon() string {
	return fmt.Sprintf("%s:%d:%d:%x", f.kind, f.size, f.offset, f.bytes)
}

// allowed reports whether a passes every filter (agave's filter_allows).
func allowed(fs []accountFilter, a *account) bool {
	for _, f := range fs {
		switch f.kind {
		case "dataSize":
			if uint64(len(a.Data)) != f.size {
				return false
			}
		case "memcmp":
			if f.offset > uint64(len(a.Data)) || uint64(len(a.Data))-f.offset < uint64(len(f.bytes)) ||
				string(a.Data[f.offset:f.offset+uint64(len(f.bytes))]) != string(f.bytes) {
				return false
			}
		case "tokenAccountState":
			if !isTokenAccount(a.Data) {
				return false
			}
		}
	}
	return true
}

// isTokenAccount is spl-token's valid_account_data: an initialized (or
// frozen) token account, or a token-2022 one with its account type byte.
// The devnet runs no token program, so none of its accounts pass.
func isTokenAccount(d []byte) bool {
	const size, stateAt = 165, 108
	if len(d) < size || d[stateAt] == 0 {
		return false
	}
	return len(d) == size || (len(d) > size && d[size] == 2)
}
