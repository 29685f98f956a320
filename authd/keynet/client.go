package keynet

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/porticohq/portico/auth/eccrypto"
	"github.com/porticohq/portico/authd/keynet/sss"
)

// Client errors.
var (
	// ErrNotEnoughCommitments: fewer than ⌊3n/4⌋+1 nodes signed the commitment.
	ErrNotEnoughCommitments = errors.New("keynet: not enough nodes signed the token commitment")
	// ErrNotEnoughShares: fewer than t nodes returned a share.
	ErrNotEnoughShares = errors.New("keynet: not enough shares")
	// ErrNoAgreement: no public key is agreed on by t nodes.
	ErrNoAgreement = errors.New("keynet: nodes do not agree on the public key")
	// ErrReconstruct: no subset of t shares gives the agreed public key.
	ErrReconstruct = errors.New("keynet: no set of shares rebuilds the agreed key")
)

// NodesError is a step that did not get enough node answers: how many it
// got and needed, and each failing node's error.
type NodesError struct {
	Step      string
	Got, Need int
	Errs      map[int]error
	Err       error
}

// Error summarizes the failures by node index.
func (e *NodesError) Error() string {
	idx := make([]int, 0, len(e.Errs))
	for i := range e.Errs {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	var parts []string
	for _, i := range idx {
		parts = append(parts, fmt.Sprintf("node %d: %v", i, e.Errs[i]))
	}
	return fmt.Sprintf("%v: %s: %d of %d needed (%s)", e.Err, e.Step, e.Got, e.Need, strings.Join(parts, "; "))
}

// Unwrap returns the sentinel.
func (e *NodesError) Unwrap() error { return e.Err }

// NodeShare is one node's decrypted answer.
type NodeShare struct {
	NodeIndex int
	Share     sss.Share
	// Commitments is the public polynomial the node reports.
	Commitments []string
	// Signed is the node's signed commitment of this login's token, if it
	// gave one.
	Signed *CommitmentAnswer
}

// KeyResult is a reconstructed key. Its private key is the user's network
// key (oAuthKey): the coreKitKey unless tKey MFA is on.
type KeyResult struct {
	PrivateKey *secp256k1.PrivateKey
	PublicKey  *secp256k1.PublicKey
	// Used are the node indexes whose shares rebuilt the key.
	Used []int
	// Rejected are the node indexes whose share did not lie on the agreed
	// public polynomial (corrupted or malicious).
	Rejected []int
	// Signed are the signed token commitments of the nodes in Used, in
	// their order (those that gave one).
	Signed []CommitmentAnswer
}

// PrivateKeyHex is the key as 64 hex characters.
func (k *KeyResult) PrivateKeyHex() string { return eccrypto.PrivateKeyHex(k.PrivateKey) }

// Client logs in against one network's nodes.
type Client struct {
	net  NetworkConfig
	http *http.Client
	// quorum is how many signed commitments to wait for; 0 means
	// CommitmentQuorum(n).
	quorum int
}

// NewClient makes a client for a network; httpClient may be nil (a
// client with a 30 s timeout, which bounds a first login's DKG wait).
func NewClient(net NetworkConfig, httpClient *http.Client) (*Client, error) {
	if err := net.Validate(); err != nil {
		return nil, err
	}
	if httpClient == nil {
		httpClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone(), Timeout: 30 * time.Second}
	}
	return &Client{net: net, http: httpClient}, nil
}

// WithCommitmentQuorum returns a copy of the client that goes on to the
// share step once q nodes have signed the token commitment, instead of
// ⌊3n/4⌋+1 as the real network's clients do; q must be t..n. Nodes still
// each require t valid commitments, so this only trades the real client's
// margin for availability: with q = t, a login works while only t nodes
// are up.
func (c *Client) WithCommitmentQuorum(q int) (*Client, error) {
	if n := len(c.net.Nodes); q < c.net.Threshold() || q > n {
		return nil, &ConfigError{Field: "commitmentQuorum", Reason: fmt.Sprintf("%d: want %d..%d", q, c.net.Threshold(), n)}
	}
	cp := *c
	cp.quorum = q
	return &cp, nil
}

// CloseIdleConnections closes the client's idle connections to the nodes.
func (c *Client) CloseIdleConnections() { c.http.CloseIdleConnections() }

// Network is the client's network.
func (c *Client) Network() NetworkConfig { return c.net }

// GetKey logs in with an id token and returns the user's key, assigning
// one on the first login.
func (c *Client) GetKey(ctx context.Context, verifier, verifierID, idToken string) (*KeyResult, error) {
	shares, err := c.FetchShares(ctx, verifier, verifierID, idToken)
	if err != nil {
		return nil, err
	}
	return Reconstruct(shares, c.net.Threshold())
}

// each runs f against every node concurrently.
func (c *Client) each(f func(p Peer) error) map[int]error {
	var mu sync.Mutex
	errs := map[int]error{}
	var wg sync.WaitGroup
	for _, p := range c.net.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := f(p)
			mu.Lock()
			errs[p.Index] = err
			mu.Unlock()
		}()
	}
	wg.Wait()
	return errs
}

// FetchShares runs the commitment and share steps and returns every share
// a node gave, decrypted, without checking them: Reconstruct does.
func (c *Client) FetchShares(ctx context.Context, verifier, verifierID, idToken string) ([]NodeShare, error) {
	temp, err := eccrypto.GenerateKey()
	if err != nil {
		return nil, err
	}
	tx, ty := coords(temp.PubKey())
	tc := hex.EncodeToString(eccrypto.Keccak256([]byte(idToken)))
	params := CommitmentParams{MessagePrefix: MessagePrefix, TokenCommitment: tc, TempPubX: tx, TempPubY: ty, VerifierIdentifier: verifier}

	var mu sync.Mutex
	var sigs []CommitmentAnswer
	errs := c.each(func(p Peer) error {
		var a CommitmentAnswer
		if err := call(ctx, c.http, p.URL, MethodCommitment, params, &a); err != nil {
			return err
		}
		if a.NodeIndex != p.Index {
			return fmt.Errorf("answered as node %d", a.NodeIndex)
		}
		mu.Lock()
		sigs = append(sigs, a)
		mu.Unlock()
		return nil
	})
	need := c.quorum
	if need == 0 {
		need = CommitmentQuorum(len(c.net.Nodes))
	}
	if len(sigs) < need {
		return nil, &NodesError{Step: MethodCommitment, Got: len(sigs), Need: need, Errs: failures(errs), Err: ErrNotEnoughCommitments}
	}
	sort.Slice(sigs, func(i, j int) bool { return sigs[i].NodeIndex < sigs[j].NodeIndex })

	req := ShareParams{Encrypted: "yes", UseTemp: true, OneKeyFlow: true, Item: []ShareItem{{
		VerifierIdentifier: verifier, VerifierID: verifierID, IDToken: idToken, NodeSignatures: sigs, TempPubX: tx, TempPubY: ty}}}
	var shares []NodeShare
	errs = c.each(func(p Peer) error {
		var res ShareResult
		if err := call(ctx, c.http, p.URL, MethodGetShare, req, &res); err != nil {
			return err
		}
		if len(res.Keys) != 1 || res.Keys[0].NodeIndex != p.Index {
			return errors.New("answer is not one key from this node")
		}
		k := res.Keys[0]
		plain, err := eccrypto.Decrypt(temp, &k.Share)
		if err != nil {
			return fmt.Errorf("share does not decrypt: %w", err)
		}
		var b [32]byte
		var v secp256k1.ModNScalar
		ok := decodeShare(string(plain), &b) == nil && v.SetBytes(&b) == 0
		clear(plain)
		clear(b[:])
		if !ok {
			return errors.New("share is not a scalar")
		}
		var signed *CommitmentAnswer
		for i := range sigs {
			if sigs[i].NodeIndex == p.Index {
				signed = &sigs[i]
			}
		}
		mu.Lock()
		shares = append(shares, NodeShare{NodeIndex: p.Index, Share: sss.IndexShare(uint32(p.Index), &v), Commitments: k.Commitments, Signed: signed})
		mu.Unlock()
		return nil
	})
	if need := c.net.Threshold(); len(shares) < need {
		return nil, &NodesError{Step: MethodGetShare, Got: len(shares), Need: need, Errs: failures(errs), Err: ErrNotEnoughShares}
	}
	sort.Slice(shares, func(i, j int) bool { return shares[i].NodeIndex < shares[j].NodeIndex })
	return shares, nil
}

func failures(errs map[int]error) map[int]error {
	out := map[int]error{}
	for i, e := range errs {
		if e != nil {
			out[i] = e
		}
	}
	return out
}

// Reconstruct rebuilds a key from node shares: it takes the public
// polynomial reported by at least threshold nodes, flags shares that do
// not lie on it, and interpolates subsets of threshold shares (checked
// shares first) until one gives the agreed public key.
func Reconstruct(shares []NodeShare, threshold int) (*KeyResult, error) {
	if threshold < 1 || len(shares) < threshold {
		return nil, fmt.Errorf("%w: %d shares, threshold %d", ErrNotEnoughShares, len(shares), threshold)
	}
	votes := map[string]int{}
	for _, s := range shares {
		votes[strings.Join(s.Commitments, ",")]++
	}
	var agreed string
	for c, v := range votes {
		if v >= threshold && (agreed == "" || v > votes[agreed]) {
			agreed = c
		}
	}
	if agreed == "" {
		return nil, ErrNoAgreement
	}
	comm, err := sss.ParseCommitment(strings.Split(agreed, ","))
	if err != nil || len(comm) != threshold {
		return nil, fmt.Errorf("%w: agreed commitments unusable", ErrNoAgreement)
	}
	pub := comm.PublicKey()
	var good, bad []NodeShare
	res := &KeyResult{PublicKey: pub}
	for _, s := range shares {
		if comm.Verify(s.Share) {
			good = append(good, s)
		} else {
			bad = append(bad, s)
			res.Rejected = append(res.Rejected, s.NodeIndex)
		}
	}
	cands := append(good, bad...)
	var found bool
	forEachSubset(len(cands), threshold, func(idx []int) bool {
		set := make([]sss.Share, len(idx))
		for i, j := range idx {
			set[i] = cands[j].Share
		}
		k, err := sss.Interpolate(set)
		if err != nil || k.IsZero() || !sss.PublicKeyOf(&k).IsEqual(pub) {
			k.Zero()
			return true
		}
		res.PrivateKey = secp256k1.NewPrivateKey(&k)
		k.Zero()
		used := make([]NodeShare, 0, len(idx))
		for _, j := range idx {
			used = append(used, cands[j])
		}
		slices.SortFunc(used, func(a, b NodeShare) int { return a.NodeIndex - b.NodeIndex })
		for _, u := range used {
			res.Used = append(res.Used, u.NodeIndex)
			if u.Signed != nil {
				res.Signed = append(res.Signed, *u.Signed)
			}
		}
		found = true
		return false
	})
	if !found {
		return nil, ErrReconstruct
	}
	return res, nil
}

// forEachSubset calls f with each k-subset of 0..n-1 (lexicographic) until
// f returns false.
func forEachSubset(n, k int, f func([]int) bool) {
	idx := make([]int, k)
	for i := range idx {
		idx[i] = i
	}
	for {
		if !f(slices.Clone(idx)) {
			return
		}
		i := k - 1
		for i >= 0 && idx[i] == n-k+i {
			i--
		}
		if i < 0 {
			return
		}
		idx[i]++
		for j := i + 1; j < k; j++ {
			idx[j] = idx[j-1] + 1
		}
	}
}
