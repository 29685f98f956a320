package wallet

import (
	"bytes"
	"crypto/ed25519"
	"log/slog"

	"github.com/gagliardetto/solana-go"
)

// SolanaAccount is the login's account on the slot chain: the ed25519 key
// and its public key, as @solana/web3.js's Keypair.fromSecretKey has them.
type SolanaAccount struct {
	key solana.PrivateKey
	pub solana.PublicKey
}

func newSolanaAccount(ed []byte) (*SolanaAccount, error) {
	// The SDK's ed25519PrivKey is seed ‖ public key; the public key must
	// be the seed's, or the key is not one ed25519 would sign with.
	derived := ed25519.NewKeyFromSeed(ed[:32])
	if !bytes.Equal(derived[32:], ed[32:]) {
		return nil, &KeyError{Field: "ed25519PrivKey", Reason: "holds a public key that is not its seed's"}
	}
	key := solana.PrivateKey(derived)
	return &SolanaAccount{key: key, pub: key.PublicKey()}, nil
}

// PublicKey is the account's address.
func (a *SolanaAccount) PublicKey() solana.PublicKey { return a.pub }

// SignTransaction adds this account's signature to tx (it must be one of
// the message's signers).
func (a *SolanaAccount) SignTransaction(tx *solana.Transaction) error {
	_, err := tx.PartialSign(func(k solana.PublicKey) *solana.PrivateKey {
		if k.Equals(a.pub) {
			return &a.key
		}
		return nil
	})
	return err
}

// SignMessage signs an off-chain message with the ed25519 key (what
// wallets' signMessage does: the bytes as given).
func (a *SolanaAccount) SignMessage(msg []byte) (solana.Signature, error) {
	return a.key.Sign(msg)
}

// String is the base58 address.
func (a *SolanaAccount) String() string { return a.pub.String() }

// GoString is the address too, so %#v shows no key.
func (a *SolanaAccount) GoString() string { return "wallet.SolanaAccount(" + a.pub.String() + ")" }

// LogValue logs the address.
func (a *SolanaAccount) LogValue() slog.Value { return slog.StringValue(a.pub.String()) }
