package keynet

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/porticohq/portico/auth/eccrypto"
	"github.com/porticohq/portico/authd/keynet/sss"
)

// ErrDKGTimeout: not every node dealt within NodeConfig.DKGTimeout (a node
// is down or unreachable); no key was assigned at this node.
var ErrDKGTimeout = errors.New("keynet: distributed key generation timed out")

// deal is one dealer's contribution as received: its commitments and its
// polynomial evaluated at this node's index.
type deal struct {
	comm  sss.Commitment
	share secp256k1.ModNScalar
}

// dkgSession is this node's part of one key assignment.
type dkgSession struct {
	verifier, verifierID string
	deals                map[int]deal
	finalizing           bool
	done                 chan struct{}
	result               *StoredKey
	err                  error
}

func sessionKey(verifier, verifierID string) string { return verifier + "\x00" + verifierID }

func parseCommitments(hs []string) (sss.Commitment, error) { return sss.ParseCommitment(hs) }

// assign returns the user's stored key share, running the DKG with the
// other nodes first if the user has none.
func (n *Node) assign(ctx context.Context, verifier, verifierID string) (*StoredKey, error) {
	k, err := n.store.Key(ctx, n.cfg.Network.Name, n.cfg.Index, verifier, verifierID)
	if err == nil {
		return k, nil
	}
	if !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	s, err := n.session(verifier, verifierID)
	if err != nil {
		return nil, err
	}
	select {
	case <-s.done:
		return s.result, s.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// session returns the running DKG session for a user, starting one (and
// dealing this node's polynomial to the others) if there is none.
func (n *Node) session(verifier, verifierID string) (*dkgSession, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if s, ok := n.sessions[sessionKey(verifier, verifierID)]; ok {
		return s, nil
	}
	if n.ctx.Err() != nil {
		return nil, errors.New("keynet: node closed")
	}
	poly, err := sss.NewPolynomial(nil, n.cfg.Network.Threshold()-1)
	if err != nil {
		return nil, err
	}
	s := &dkgSession{verifier: verifier, verifierID: verifierID, deals: map[int]deal{}, done: make(chan struct{})}
	own := poly.Share(uint32(n.cfg.Index))
	comm := poly.Commit()
	s.deals[n.cfg.Index] = deal{comm: comm, share: own.Value}
	msgs, err := n.makeDeals(s, poly, comm)
	poly.Zero() // the dealer's secret is not needed once dealt
	if err != nil {
		return nil, err
	}
	n.sessions[sessionKey(verifier, verifierID)] = s
	n.wg.Add(1)
	go n.runSession(s, msgs)
	return s, nil
}

// makeDeals encrypts each other node's evaluation to that node and signs
// the deal.
func (n *Node) makeDeals(s *dkgSession, poly sss.Polynomial, comm sss.Commitment) (map[Peer]*DealParams, error) {
	out := map[Peer]*DealParams{}
	for _, p := range n.cfg.Network.Nodes {
		if p.Index == n.cfg.Index {
			continue
		}
		pub, err := eccrypto.ParsePublicKeyHex(p.PublicKey)
		if err != nil {
			return nil, err
		}
		sh := poly.Share(uint32(p.Index))
		b := sh.Value.Bytes()
		plain := []byte(hex.EncodeToString(b[:]))
		enc, err := eccrypto.Encrypt(pub, plain)
		clear(plain)
		clear(b[:])
		sh.Value.Zero()
		if err != nil {
			return nil, err
		}
		d := &DealParams{Network: n.cfg.Network.Name, Verifier: s.verifier, VerifierID: s.verifierID,
			Dealer: n.cfg.Index, Recipient: p.Index, Commitments: comm.Hex(), Share: *enc}
		d.Signature = eccrypto.Sign(n.key, d.signedBytes())
		out[p] = d
	}
	return out, nil
}

// runSession sends the deals (retrying until each peer takes its deal,
// even after this node has finished: the others still need its deal) and
// fails the session if it does not complete within DKGTimeout.
func (n *Node) runSession(s *dkgSession, msgs map[Peer]*DealParams) {
	defer n.wg.Done()
	ctx, cancel := context.WithTimeout(n.ctx, n.cfg.DKGTimeout)
	defer cancel()
	var senders sync.WaitGroup
	for p, d := range msgs {
		senders.Add(1)
		go func() {
			defer senders.Done()
			n.sendDeal(ctx, p, d)
		}()
	}
	sent := make(chan struct{})
	go func() {
		senders.Wait()
		close(sent)
	}()
	select {
	case <-s.done:
	case <-ctx.Done():
		n.finish(s, nil, ErrDKGTimeout)
	}
	select {
	case <-sent:
	case <-ctx.Done():
	}
	cancel()
	<-sent
}

func (n *Node) sendDeal(ctx context.Context, p Peer, d *DealParams) {
	backoff := 50 * time.Millisecond
	for {
		err := call(ctx, n.http, p.URL, MethodDKGDeal, d, nil)
		if err == nil {
			return
		}
		var re *RPCError
		if errors.As(err, &re) {
			// The peer refused the deal: it will not complete this session.
			n.log.Warn("peer refused a deal", "peer", p.Index, "err", re.Message)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// receiveDeal checks a deal from another node (its signature, and its
// share against its commitments: Feldman) and adds it to the session.
func (n *Node) receiveDeal(p DealParams) *RPCError {
	if p.Network != n.cfg.Network.Name || p.Recipient != n.cfg.Index {
		return &RPCError{CodeInvalidParams, "network/recipient: deal not meant for this node"}
	}
	peer, ok := n.cfg.Network.peer(p.Dealer)
	if !ok || p.Dealer == n.cfg.Index {
		return &RPCError{CodeInvalidParams, "dealer: not another node of this network"}
	}
	if p.Verifier == "" || p.VerifierID == "" {
		return &RPCError{CodeInvalidParams, "verifier/verifier_id: empty"}
	}
	pub, _ := eccrypto.ParsePublicKeyHex(peer.PublicKey)
	if !eccrypto.Verify(pub, p.signedBytes(), p.Signature) {
		return &RPCError{CodeBadSignature, "signature: not the dealer's"}
	}
	comm, err := parseCommitments(p.Commitments)
	if err != nil || len(comm) != n.cfg.Network.Threshold() {
		return &RPCError{CodeInvalidParams, fmt.Sprintf("commitments: want %d points", n.cfg.Network.Threshold())}
	}
	plain, err := eccrypto.Decrypt(n.key, &p.Share)
	if err != nil {
		return &RPCError{CodeInvalidParams, "share: does not decrypt with this node's key"}
	}
	var b [32]byte
	var v secp256k1.ModNScalar
	ok = decodeShare(string(plain), &b) == nil && v.SetBytes(&b) == 0
	clear(plain)
	clear(b[:])
	if !ok {
		return &RPCError{CodeInvalidParams, "share: not a scalar"}
	}
	if !comm.Verify(sss.IndexShare(uint32(n.cfg.Index), &v)) {
		n.log.Warn("deal does not match its commitments", "dealer", p.Dealer)
		return &RPCError{CodeBadSignature, "share: does not match the dealer's commitments"}
	}
	if _, err := n.store.Key(n.ctx, n.cfg.Network.Name, n.cfg.Index, p.Verifier, p.VerifierID); err == nil {
		return nil // already assigned here: a late deal
	}
	s, err := n.session(p.Verifier, p.VerifierID)
	if err != nil {
		return &RPCError{CodeInternal, "internal error"}
	}
	n.addDeal(s, p.Dealer, deal{comm: comm, share: v})
	return nil
}

// addDeal records a deal; the last one needed finalizes the session.
func (n *Node) addDeal(s *dkgSession, dealer int, d deal) {
	n.mu.Lock()
	if s.finalizing {
		n.mu.Unlock()
		return
	}
	s.deals[dealer] = d
	if len(s.deals) < len(n.cfg.Network.Nodes) {
		n.mu.Unlock()
		return
	}
	s.finalizing = true
	n.mu.Unlock()
	k, err := n.finalize(s)
	n.finish(s, k, err)
}

// finalize sums the deals into this node's share and the public
// polynomial and stores them.
func (n *Node) finalize(s *dkgSession) (*StoredKey, error) {
	var share secp256k1.ModNScalar
	var comm sss.Commitment
	for _, p := range n.cfg.Network.Nodes {
		d := s.deals[p.Index]
		share.Add(&d.share)
		if comm == nil {
			comm = d.comm
			continue
		}
		var err error
		if comm, err = comm.Add(d.comm); err != nil {
			return nil, err
		}
	}
	if !comm.Verify(sss.IndexShare(uint32(n.cfg.Index), &share)) {
		return nil, errors.New("keynet: summed share does not match the summed commitments")
	}
	k := StoredKey{Network: n.cfg.Network.Name, Node: n.cfg.Index, Verifier: s.verifier, VerifierID: s.verifierID,
		Share: share.Bytes(), Commitments: comm.Hex(), CreatedAt: n.now()}
	share.Zero()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(n.ctx), 10*time.Second)
	defer cancel()
	err := n.store.PutKey(ctx, k)
	if errors.Is(err, ErrKeyExists) {
		return n.store.Key(ctx, k.Network, k.Node, k.Verifier, k.VerifierID)
	}
	if err != nil {
		return nil, err
	}
	return &k, nil
}

// finish ends a session once.
func (n *Node) finish(s *dkgSession, k *StoredKey, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	select {
	case <-s.done:
		return
	default:
	}
	s.result, s.err = k, err
	for i, d := range s.deals {
		d.share.Zero()
		s.deals[i] = d
	}
	close(s.done)
	if key := sessionKey(s.verifier, s.verifierID); n.sessions[key] == s {
		delete(n.sessions, key)
	}
}
