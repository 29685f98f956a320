package keynet

import (
	"context"
	"encoding/hex"
	"errors"
	"sync"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/porticohq/portico/auth/eccrypto"
)

// SetMetadata stores data as owner's metadata at every node, signed by the
// owner's key (the user's network key); at least t nodes must take it.
// version must exceed the stored one.
func (c *Client) SetMetadata(ctx context.Context, owner *secp256k1.PrivateKey, version int64, data string) error {
	sig := eccrypto.Sign(owner, MetadataSigningBytes(c.net.Name, version, data))
	p := MetadataParams{Owner: hex.EncodeToString(owner.PubKey().SerializeCompressed()), Version: version, Data: data, Signature: &sig}
	errs := c.each(func(peer Peer) error { return call(ctx, c.http, peer.URL, MethodSetMetadata, p, nil) })
	fails := failures(errs)
	if ok, need := len(c.net.Nodes)-len(fails), c.net.Threshold(); ok < need {
		return &NodesError{Step: MethodSetMetadata, Got: ok, Need: need, Errs: fails, Err: errors.New("keynet: metadata not stored")}
	}
	return nil
}

// GetMetadata returns owner's newest metadata whose signature verifies
// (nodes cannot forge it; one that withholds or serves an old version is
// outvoted by the newest valid one). ErrNotFound if no node has any.
func (c *Client) GetMetadata(ctx context.Context, owner *secp256k1.PublicKey) (version int64, data string, err error) {
	p := MetadataParams{Owner: hex.EncodeToString(owner.SerializeCompressed())}
	var mu sync.Mutex
	found := false
	errs := c.each(func(peer Peer) error {
		var m MetadataParams
		if err := call(ctx, c.http, peer.URL, MethodGetMetadata, p, &m); err != nil {
			return err
		}
		if m.Signature == nil || !eccrypto.Verify(owner, MetadataSigningBytes(c.net.Name, m.Version, m.Data), *m.Signature) {
			return errors.New("metadata signature does not verify")
		}
		mu.Lock()
		if !found || m.Version > version {
			version, data, found = m.Version, m.Data, true
		}
		mu.Unlock()
		return nil
	})
	if found {
		return version, data, nil
	}
	fails := failures(errs)
	notFound := 0
	for _, e := range fails {
		var re *RPCError
		if errors.As(e, &re) && re.Code == CodeNotFound {
			notFound++
		}
	}
	if notFound >= c.net.Threshold() {
		return 0, "", ErrNotFound
	}
	return 0, "", &NodesError{Step: MethodGetMetadata, Got: 0, Need: 1, Errs: fails, Err: errors.New("keynet: metadata unavailable")}
}
