package starknetdevnet

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/families/rpcparams"
	"github.com/porticohq/portico/families/starknet/starknettx"
)

// Limits of getEvents, as pathfinder sets them.
const (
	MaxChunkSize    = 1024
	MaxKeyPositions = 16
	MaxKeys         = 256 // felts over all positions
)

// Block tags the devnet accepts: v0.8's latest and pending, and the later
// specs' pre_confirmed (a synonym of pending) and l1_accepted.
var blockTags = []string{"latest", "pending", "pre_confirmed", "l1_accepted"}

// blockRef is a decoded BLOCK_ID.
type blockRef struct {
	tag    string // one of blockTags, or "" for a hash or number
	byHash bool
	hash   Felt
	number uint64
}

// String is the canonical text of the reference, for token fingerprints.
func (r blockRef) String() string {
	switch {
	case r.tag != "":
		return r.tag
	case r.byHash:
		return "h" + starknettx.Hex(&r.hash)
	}
	return "n" + strconv.FormatUint(r.number, 10)
}

// eventFilter is a decoded getEvents filter.
type eventFilter struct {
	from, to   *blockRef // nil when absent: from genesis, to pending
	addresses  []Felt
	keys       [][]Felt // trailing empty positions trimmed
	chunkSize  int
	token      string
	hasToken   bool
	fingerprnt [4]byte
}

// decodeEventsParams decodes {filter} or [filter] and checks every field.
// Errors are *portico.ParamsError (-32602) or the spec's 31 and 34.
func decodeEventsParams(raw jsontext.Value) (*eventFilter, error) {
	p, pos, err := splitParams(raw, "filter")
	if err != nil {
		return nil, err
	}
	at := pos(0)
	obj, err := rpcparams.Object(p["filter"], at, "filter", "from_block", "to_block", "address", "keys", "chunk_size", "continuation_token")
	if err != nil {
		return nil, err
	}
	f := &eventFilter{}
	if v, ok := obj["from_block"]; ok {
		if f.from, err = decodeBlockID(v, at, "filter.from_block"); err != nil {
			return nil, err
		}
	}
	if v, ok := obj["to_block"]; ok {
		if f.to, err = decodeBlockID(v, at, "filter.to_block"); err != nil {
			return nil, err
		}
	}
	if v, ok := obj["address"]; ok {
		if v.Kind() == '[' {
			items, err := rpcparams.Array(v, at, "filter.address")
			if err != nil {
				return nil, err
			}
			for i, it := range items {
				a, err := decodeFelt(it, at, rpcparams.Index("filter.address", i))
				if err != nil {
					return nil, err
				}
				f.addresses = append(f.addresses, a)
			}
		} else {
			a, err := decodeFelt(v, at, "filter.address")
			if err != nil {
				return nil, err
			}
			f.addresses = []Felt{a}
		}
	}
	if v, ok := obj["keys"]; ok {
		if f.keys, err = decodeKeys(v, at, "filter.keys"); err != nil {
			return nil, err
		}
	}
	v, ok := obj["chunk_size"]
	if !ok {
		return nil, rpcparams.Errorf(at, "filter.chunk_size", "missing; it is required")
	}
	size, err := rpcparams.Uint(v, at, "filter.chunk_size", rpcparams.MaxUint64)
	if err != nil {
		return nil, err
	}
	if size == 0 {
		return nil, rpcparams.Errorf(at, "filter.chunk_size", "must be at least 1, got 0")
	}
	if size > MaxChunkSize {
		return nil, ErrPageSizeTooBig
	}
	f.chunkSize = int(size)
	if v, ok := obj["continuation_token"]; ok {
		if f.token, err = rpcparams.String(v, at, "filter.continuation_token"); err != nil {
			return nil, err
		}
		f.hasToken = true
	}
	f.fingerprnt = f.fingerprint()
	return f, nil
}

// decodeKeys decodes a keys filter (field names it in errors): an array of
// positions, each an array of felts. Trailing empty positions match
// anything and are dropped, as pathfinder does, so [["A"],[]] matches an
// event with the single key A.
func decodeKeys(v jsontext.Value, at int, field string) ([][]Felt, error) {
	outer, err := rpcparams.Array(v, at, field)
	if err != nil {
		return nil, err
	}
	if len(outer) > MaxKeyPositions {
		return nil, ErrTooManyKeys
	}
	keys := make([][]Felt, len(outer))
	total := 0
	for i, pos := range outer {
		posField := rpcparams.Index(field, i)
		inner, err := rpcparams.Array(pos, at, posField)
		if err != nil {
			return nil, err
		}
		total += len(inner)
		if total > MaxKeys {
			return nil, ErrTooManyKeys
		}
		for j, k := range inner {
			f, err := decodeFelt(k, at, rpcparams.Index(posField, j))
			if err != nil {
				return nil, err
			}
			keys[i] = append(keys[i], f)
		}
	}
	for len(keys) > 0 && len(keys[len(keys)-1]) == 0 {
		keys = keys[:len(keys)-1]
	}
	return keys, nil
}

// fingerprint binds a continuation token to the filter it was issued for
// (everything but the page size and the token).
func (f *eventFilter) fingerprint() [4]byte {
	var b strings.Builder
	for _, r := range []*blockRef{f.from, f.to} {
		if r != nil {
			b.WriteString(r.String())
		}
		b.WriteByte('|')
	}
	for i := range f.addresses {
		b.WriteString(starknettx.Hex(&f.addresses[i]))
		b.WriteByte(',')
	}
	for _, pos := range f.keys {
		b.WriteByte('[')
		for i := range pos {
			b.WriteString(starknettx.Hex(&pos[i]))
			b.WriteByte(',')
		}
	}
	sum := sha256.Sum256([]byte(b.String()))
	return [4]byte(sum[:4])
}

// matches applies the address and keys filter to an event.
func (f *eventFilter) matches(from *Felt, keys []Felt) bool {
	if len(f.addresses) > 0 && !containsFelt(f.addresses, from) {
		return false
	}
	if len(keys) < len(f.keys) {
		return false
	}
	for i, pos := range f.keys {
		if len(pos) > 0 && !containsFelt(pos, &keys[i]) {
			return false
		}
	}
	return true
}

func containsFelt(list []Felt, f *Felt) bool {
	for i := range list {
		if list[i].Equal(f) {
			return true
		}
	}
	return false
}

// position is where an event sits: its block and its index in the block.
type position struct {
	block uint64
	pos   uint64
}

func (p position) less(q position) bool {
	return p.block < q.block || p.block == q.block && p.pos < q.pos
}

// encodeToken makes the opaque continuation token: a version byte, the
// position of the next matching event, and the filter's fingerprint, in
// unpadded base64url.
func encodeToken(p position, fp [4]byte) string {
	b := []byte{1}
	b = binary.AppendUvarint(b, p.block)
	b = binary.AppendUvarint(b, p.pos)
	b = append(b, fp[:]...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeToken reverses encodeToken; any mismatch is ErrInvalidToken.
func decodeToken(s string, fp [4]byte) (position, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) < 1+2+4 || b[0] != 1 {
		return position{}, ErrInvalidToken
	}
	b = b[1:]
	block, n := binary.Uvarint(b)
	if n <= 0 {
		return position{}, ErrInvalidToken
	}
	b = b[n:]
	pos, n := binary.Uvarint(b)
	if n <= 0 || len(b[n:]) != 4 || [4]byte(b[n:]) != fp {
		return position{}, ErrInvalidToken
	}
	return position{block, pos}, nil
}

// decodeBlockID decodes a BLOCK_ID: {block_hash}, {block_number} or a tag.
func decodeBlockID(v jsontext.Value, at int, field string) (*blockRef, error) {
	const want = `want {"block_hash": felt}, {"block_number": integer} or one of latest, pending, pre_confirmed, l1_accepted`
	switch v.Kind() {
	case '"':
		tag, err := rpcparams.Enum(v, at, field, blockTags...)
		if err != nil {
			return nil, rpcparams.Errorf(at, field, "%s, got %s", want, rpcparams.Describe(v))
		}
		return &blockRef{tag: tag}, nil
	case '{':
		obj, err := rpcparams.Object(v, at, field, "block_hash", "block_number")
		if err != nil {
			return nil, err
		}
		h, hasHash := obj["block_hash"]
		n, hasNum := obj["block_number"]
		switch {
		case hasHash == hasNum:
			return nil, rpcparams.Errorf(at, field, "set exactly one of block_hash and block_number")
		case hasHash:
			f, err := decodeFelt(h, at, field+".block_hash")
			return &blockRef{byHash: true, hash: f}, err
		}
		num, err := rpcparams.Uint(n, at, field+".block_number", 1<<62)
		return &blockRef{number: num}, err
	}
	return nil, rpcparams.Errorf(at, field, "%s, got %s", want, rpcparams.Describe(v))
}

// decodeFelt decodes a FELT string.
func decodeFelt(v jsontext.Value, at int, field string) (Felt, error) {
	s, err := rpcparams.String(v, at, field)
	if err != nil {
		return Felt{}, err
	}
	f, err := starknettx.ParseFelt(s)
	if err != nil {
		return Felt{}, rpcparams.Errorf(at, field, "%v, got %s", err, rpcparams.Describe(v))
	}
	return f, nil
}

// splitParams splits named or positional params whose first one is
// required; pos maps a param's index to the position errors report (0 when
// named).
func splitParams(raw jsontext.Value, names ...string) (map[string]jsontext.Value, func(int) int, error) {
	return splitParamsN(raw, 1, names...)
}

// splitParamsN is splitParams with the first required params required. With
// none required, absent params are an empty map.
func splitParamsN(raw jsontext.Value, required int, names ...string) (map[string]jsontext.Value, func(int) int, error) {
	if len(raw) == 0 && required == 0 {
		return map[string]jsontext.Value{}, func(int) int { return 0 }, nil
	}
	if len(raw) > 0 && raw.Kind() == '{' {
		obj, err := rpcparams.Object(raw, 0, "", names...)
		if err != nil {
			return nil, nil, err
		}
		for _, n := range names[:required] {
			if _, ok := obj[n]; !ok {
				return nil, nil, rpcparams.Errorf(0, n, "missing; it is required")
			}
		}
		return obj, func(int) int { return 0 }, nil
	}
	if len(raw) == 0 || raw.Kind() != '[' {
		return nil, nil, rpcparams.Errorf(0, "", "want an object {%s} or an array, got %s", strings.Join(names, ", "), rpcparams.Describe(raw))
	}
	items, err := rpcparams.Positional(raw, required, names...)
	if err != nil {
		return nil, nil, err
	}
	out := map[string]jsontext.Value{}
	for i, v := range items {
		out[names[i]] = v
	}
	return out, func(i int) int { return i + 1 }, nil
}
