package keynet

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"github.com/porticohq/portico/auth/eccrypto"
	"github.com/porticohq/portico/authd/idtoken"
	"github.com/porticohq/portico/jsonrpc"
)

// Storage is what a node keeps; *Store implements it on SQLite and
// PostgreSQL.
type Storage interface {
	Key(ctx context.Context, network string, node int, verifier, verifierID string) (*StoredKey, error)
	PutKey(ctx context.Context, k StoredKey) error
	UseToken(ctx context.Context, network string, node int, commitment string, expires time.Time) error
	Metadata(ctx context.Context, network string, node int, owner string) (*SignedMetadata, error)
	PutMetadata(ctx context.Context, m SignedMetadata) error
}

var _ Storage = (*Store)(nil)

// maxRequestBytes bounds a JSON-RPC request body.
const maxRequestBytes = 1 << 20

// NodeOptions are a node's dependencies.
type NodeOptions struct {
	// HTTPClient carries deals to peers; if nil, a client of the node's
	// own with a 10 s timeout, whose idle connections Close closes.
	HTTPClient *http.Client
	// Logger; slog.Default() if nil. Tokens, shares and keys are never logged.
	Logger *slog.Logger
	// Now is the clock; time.Now if nil.
	Now func() time.Time
	// IDToken are the options of the node's token verifiers (their HTTP
	// client and clock; Now is used if their clock is unset).
	IDToken idtoken.Options
}

// Node is one node of the key network.
type Node struct {
	cfg       NodeConfig
	key       *secp256k1.PrivateKey
	store     Storage
	verifiers *idtoken.Registry
	http      *http.Client
	log       *slog.Logger
	now       func() time.Time

	// ctx ends at Close; it bounds the goroutines that send deals.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	rpc *jsonrpc.Server

	mu       sync.Mutex
	sessions map[string]*dkgSession
}

// NewNode makes a node over its storage. Serve Handler() to run it, and
// Close it to stop its goroutines (it does not close the storage). A
// *Store is made to seal the shares it keeps under a key derived from the
// node's signing key, and the shares it holds in plain are sealed now.
func NewNode(cfg NodeConfig, store Storage, opts NodeOptions) (*Node, error) {
	cfg.withDefaults()
	key, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.IDToken.Now == nil {
		opts.IDToken.Now = opts.Now
	}
	reg, err := idtoken.NewRegistry(cfg.Verifiers, opts.IDToken)
	if err != nil {
		return nil, err
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone(), Timeout: 10 * time.Second}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &Node{
		cfg: cfg, key: key, store: store, verifiers: reg, http: opts.HTTPClient,
		log: opts.Logger.With("network", cfg.Network.Name, "node", cfg.Index), now: opts.Now,
		ctx: ctx, cancel: cancel, sessions: map[string]*dkgSession{},
	}
	n.rpc = jsonrpc.NewServer(n, jsonrpc.ServerOptions{Limits: jsonrpc.Limits{MaxBodyBytes: maxRequestBytes}, Logger: n.log})
	if st, ok := store.(sealable); ok {
		sl, err := NewSealer(key)
		if err != nil {
			return nil, err
		}
		st.SealWith(sl)
		sealed, err := st.SealPlaintext(ctx, cfg.Network.Name, cfg.Index)
		if err != nil {
			cancel()
			return nil, err
		}
		if sealed > 0 {
			n.log.Info("keynet: sealed shares stored before sealing", "shares", sealed)
		}
	}
	return n, nil
}

// sealable is storage that seals shares at rest (*Store): NewNode gives
// it a Sealer under the node's own key and seals what it holds in plain.
type sealable interface {
	SealWith(*Sealer)
	SealPlaintext(ctx context.Context, network string, node int) (int, error)
}

// Index is the node's index.
func (n *Node) Index() int { return n.cfg.Index }

// Close stops the node's goroutines (deals being sent) and fails key
// assignments in progress.
func (n *Node) Close() error {
	n.cancel()
	n.rpc.Close()
	n.wg.Wait()
	n.http.CloseIdleConnections()
	return nil
}

// Handler serves the node's JSON-RPC API (POST, any path) through the
// shared jsonrpc.Server.
func (n *Node) Handler() http.Handler { return n.rpc }

// ServeRPC answers one call: the node's jsonrpc.Handler. Results are
// encoded with encoding/json, whose rules the wire types are written for.
func (n *Node) ServeRPC(ctx context.Context, method string, params jsontext.Value) (any, error) {
	result, rerr := n.dispatch(ctx, method, json.RawMessage(params))
	if rerr != nil {
		return nil, &jsonrpc.Error{Code: rerr.Code, Message: rerr.Message}
	}
	b, err := json.Marshal(result)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(b), nil
}

func (n *Node) dispatch(ctx context.Context, method string, params json.RawMessage) (any, *RPCError) {
	decode := func(v any) *RPCError {
		if err := json.Unmarshal(params, v); err != nil {
			return &RPCError{CodeInvalidParams, "params: " + err.Error()}
		}
		return nil
	}
	switch method {
	case MethodCommitment:
		var p CommitmentParams
		if e := decode(&p); e != nil {
			return nil, e
		}
		return n.commitment(p)
	case MethodGetShare:
		var p ShareParams
		if e := decode(&p); e != nil {
			return nil, e
		}
		return n.getShare(ctx, p)
	case MethodDKGDeal:
		var p DealParams
		if e := decode(&p); e != nil {
			return nil, e
		}
		if err := n.receiveDeal(p); err != nil {
			return nil, err
		}
		return map[string]bool{"ok": true}, nil
	case MethodSetMetadata:
		var p MetadataParams
		if e := decode(&p); e != nil {
			return nil, e
		}
		return n.setMetadata(ctx, p)
	case MethodGetMetadata:
		var p MetadataParams
		if e := decode(&p); e != nil {
			return nil, e
		}
		return n.getMetadata(ctx, p)
	}
	return nil, &RPCError{CodeMethodNotFound, "unknown method " + strconv.Quote(method)}
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// tempKey parses the client's temporary public key from hex coordinates.
func tempKey(x, y string) (*secp256k1.PublicKey, error) {
	pad := func(s string) string { return strings.Repeat("0", max(0, 64-len(s))) + s }
	x, y = pad(strings.TrimPrefix(x, "0x")), pad(strings.TrimPrefix(y, "0x"))
	if len(x) != 64 || len(y) != 64 {
		return nil, errors.New("coordinates longer than 32 bytes")
	}
	return eccrypto.ParsePublicKeyHex("04" + x + y)
}

// commitment signs a client's token commitment.
func (n *Node) commitment(p CommitmentParams) (*CommitmentAnswer, *RPCError) {
	switch {
	case p.MessagePrefix != MessagePrefix:
		return nil, &RPCError{CodeInvalidParams, "messageprefix: want " + MessagePrefix}
	case !isHex64(p.TokenCommitment):
		return nil, &RPCError{CodeInvalidParams, "tokencommitment: want 64 hex characters (keccak256 of the id token)"}
	case p.VerifierIdentifier == "" || strings.Contains(p.VerifierIdentifier, fieldSep):
		return nil, &RPCError{CodeInvalidParams, "verifieridentifier: empty or invalid"}
	}
	pub, err := tempKey(p.TempPubX, p.TempPubY)
	if err != nil {
		return nil, &RPCError{CodeInvalidParams, "temppubx/temppuby: not a secp256k1 point"}
	}
	x, y := coords(pub)
	data := strings.Join([]string{MessagePrefix, strings.ToLower(p.TokenCommitment), x, y,
		strconv.FormatInt(n.now().Unix(), 10), p.VerifierIdentifier}, fieldSep)
	nx, ny := coords(n.key.PubKey())
	return &CommitmentAnswer{Data: data, Signature: eccrypto.Sign(n.key, []byte(data)), NodePubX: nx, NodePubY: ny, NodeIndex: n.cfg.Index}, nil
}

// coords returns a point's coordinates as 64 hex characters each.
func coords(pub *secp256k1.PublicKey) (string, string) {
	u := pub.SerializeUncompressed()
	return hex.EncodeToString(u[1:33]), hex.EncodeToString(u[33:65])
}

// checkCommitments counts distinct nodes whose valid, fresh signature
// commits to this token, temporary key and verifier.
func (n *Node) checkCommitments(item ShareItem, tokenCommitment string, temp *secp256k1.PublicKey) int {
	tx, ty := coords(temp)
	good := map[int]bool{}
	now := n.now()
	for _, a := range item.NodeSignatures {
		peer, ok := n.cfg.Network.peer(a.NodeIndex)
		if !ok || good[a.NodeIndex] {
			continue
		}
		pub, err := eccrypto.ParsePublicKeyHex(peer.PublicKey)
		if err != nil || !eccrypto.Verify(pub, []byte(a.Data), a.Signature) {
			continue
		}
		f := strings.Split(a.Data, fieldSep)
		if len(f) != 6 || f[0] != MessagePrefix || f[1] != tokenCommitment || f[2] != tx || f[3] != ty || f[5] != item.VerifierIdentifier {
			continue
		}
		ts, err := strconv.ParseInt(f[4], 10, 64)
		if err != nil {
			continue
		}
		age := now.Sub(time.Unix(ts, 0))
		if age > n.cfg.CommitmentTTL || age < -time.Minute {
			continue
		}
		good[a.NodeIndex] = true
	}
	return len(good)
}

// getShare serves GetShareOrKeyAssign: it checks the token and the
// commitments, assigns the key if needed, and returns this node's share
// encrypted to the temporary key.
func (n *Node) getShare(ctx context.Context, p ShareParams) (*ShareResult, *RPCError) {
	if len(p.Item) != 1 {
		return nil, &RPCError{CodeInvalidParams, "item: want exactly one login"}
	}
	item := p.Item[0]
	id, err := n.verifiers.Verify(ctx, item.VerifierIdentifier, item.IDToken)
	if err != nil {
		// The error names the verifier and the failing claim, never the token.
		return nil, &RPCError{CodeBadToken, err.Error()}
	}
	if item.VerifierID != "" && item.VerifierID != id.VerifierID {
		return nil, &RPCError{CodeBadToken, "verifier_id: does not match the id token"}
	}
	temp, err := tempKey(item.TempPubX, item.TempPubY)
	if err != nil {
		return nil, &RPCError{CodeInvalidParams, "temppubx/temppuby: not a secp256k1 point"}
	}
	tc := hex.EncodeToString(eccrypto.Keccak256([]byte(item.IDToken)))
	if got, need := n.checkCommitments(item, tc, temp), n.cfg.Network.Threshold(); got < need {
		return nil, &RPCError{CodeBadCommitment, fmt.Sprintf("nodesignatures: %d valid commitments to this token and temporary key, need %d", got, need)}
	}
	k, err := n.assign(ctx, item.VerifierIdentifier, id.VerifierID)
	if err != nil {
		n.log.Warn("key assignment failed", "verifier", item.VerifierIdentifier, "err", err)
		return nil, &RPCError{CodeKeyAssign, "key assignment failed; try again"}
	}
	if err := n.store.UseToken(ctx, n.cfg.Network.Name, n.cfg.Index, tc, n.now().Add(n.cfg.TokenMemory)); err != nil {
		if errors.Is(err, ErrTokenReused) {
			return nil, &RPCError{CodeTokenReused, "idtoken: already used at this node"}
		}
		n.log.Error("recording a used token", "err", err)
		return nil, &RPCError{CodeInternal, "internal error"}
	}
	plain := []byte(hex.EncodeToString(k.Share[:]))
	enc, err := eccrypto.Encrypt(temp, plain)
	clear(plain)
	if err != nil {
		return nil, &RPCError{CodeInternal, "internal error"}
	}
	comm, err := parseCommitments(k.Commitments)
	if err != nil {
		n.log.Error("stored commitments unreadable", "verifier", item.VerifierIdentifier, "err", err)
		return nil, &RPCError{CodeInternal, "internal error"}
	}
	px, py := coords(comm.PublicKey())
	return &ShareResult{Keys: []ShareKey{{
		NodeIndex: n.cfg.Index, Verifier: item.VerifierIdentifier, VerifierID: id.VerifierID,
		PublicKey: PublicKeyXY{X: px, Y: py}, Commitments: k.Commitments, Share: *enc,
	}}}, nil
}

// setMetadata stores a user's signed metadata if it is newer.
func (n *Node) setMetadata(ctx context.Context, p MetadataParams) (any, *RPCError) {
	owner, err := eccrypto.ParsePublicKeyHex(p.Owner)
	if err != nil {
		return nil, &RPCError{CodeInvalidParams, "owner: not a public key"}
	}
	if p.Signature == nil || !eccrypto.Verify(owner, MetadataSigningBytes(n.cfg.Network.Name, p.Version, p.Data), *p.Signature) {
		return nil, &RPCError{CodeBadSignature, "signature: not the owner's signature over this network, version and data"}
	}
	if p.Version < 1 || len(p.Data) > 256<<10 {
		return nil, &RPCError{CodeInvalidParams, "version must be positive and data at most 256 KiB"}
	}
	err = n.store.PutMetadata(ctx, SignedMetadata{Network: n.cfg.Network.Name, Node: n.cfg.Index,
		Owner: hex.EncodeToString(owner.SerializeCompressed()), Version: p.Version, Data: p.Data, Signature: p.Signature.String()})
	if errors.Is(err, ErrStaleMetadata) {
		return nil, &RPCError{CodeStale, "version: not newer than the stored metadata"}
	}
	if err != nil {
		n.log.Error("storing metadata", "err", err)
		return nil, &RPCError{CodeInternal, "internal error"}
	}
	return map[string]bool{"ok": true}, nil
}

// getMetadata returns a user's signed metadata.
func (n *Node) getMetadata(ctx context.Context, p MetadataParams) (*MetadataParams, *RPCError) {
	owner, err := eccrypto.ParsePublicKeyHex(p.Owner)
	if err != nil {
		return nil, &RPCError{CodeInvalidParams, "owner: not a public key"}
	}
	m, err := n.store.Metadata(ctx, n.cfg.Network.Name, n.cfg.Index, hex.EncodeToString(owner.SerializeCompressed()))
	if errors.Is(err, ErrNotFound) {
		return nil, &RPCError{CodeNotFound, "no metadata for this owner"}
	}
	if err != nil {
		n.log.Error("reading metadata", "err", err)
		return nil, &RPCError{CodeInternal, "internal error"}
	}
	var sig eccrypto.Signature
	if err := json.Unmarshal([]byte(m.Signature), &sig); err != nil {
		return nil, &RPCError{CodeInternal, "internal error"}
	}
	return &MetadataParams{Owner: m.Owner, Version: m.Version, Data: m.Data, Signature: &sig}, nil
}
