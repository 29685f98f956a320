package wallet

import (
	"crypto/sha256"
	"errors"
	"log/slog"
	"math/big"

	"github.com/porticohq/portico/families/starknet/starknettx"
)

// StarknetAccount is the login's account on the rollup: a Stark key ground
// from the secp256k1 key (starknet.js's ec.starkCurve.grindKey), its
// public key, and the address of the standard account
// (starknettx.OZAccountClassHash) for that key.
type StarknetAccount struct {
	priv *big.Int
	pub  starknettx.Felt
	addr starknettx.Felt
}

func newStarknetAccount(seed []byte) (*StarknetAccount, error) {
	priv, err := GrindKey(seed)
	if err != nil {
		return nil, err
	}
	return NewStarknetAccount(priv)
}

// NewStarknetAccount is the standard account of a Stark private key given
// as it is (a devnet's faucet key, a key from another wallet); logins use
// FromState, which grinds the key out of the login's.
func NewStarknetAccount(priv *big.Int) (*StarknetAccount, error) {
	priv = new(big.Int).Set(priv)
	pub, err := starknettx.PublicKey(priv)
	if err != nil {
		return nil, err
	}
	return &StarknetAccount{priv: priv, pub: pub, addr: starknettx.AccountAddress(pub)}, nil
}

// GrindKey derives a Stark private key from seed as starknet.js's
// ec.starkCurve.grindKey does (and the rollup's wallets with it): the
// first SHA-256(seed ‖ i), for i = 0, 1, … as the shortest big-endian
// bytes, below the largest multiple of the curve order under 2^256,
// reduced modulo the order. The rejection keeps the key uniform.
func GrindKey(seed []byte) (*big.Int, error) {
	n := starknettx.CurveOrder()
	mask := new(big.Int).Lsh(big.NewInt(1), 256)
	limit := new(big.Int).Sub(mask, new(big.Int).Mod(mask, n))
	buf := make([]byte, 0, len(seed)+8)
	defer clear(buf)
	for i := int64(0); i <= 100_000; i++ {
		buf = append(buf[:0], seed...)
		if i == 0 {
			buf = append(buf, 0)
		} else {
			buf = append(buf, big.NewInt(i).Bytes()...)
		}
		sum := sha256.Sum256(buf)
		key := new(big.Int).SetBytes(sum[:])
		clear(sum[:])
		if key.Cmp(limit) < 0 {
			key.Mod(key, n)
			if key.Sign() == 0 {
				return nil, errors.New("wallet: the ground Stark key is zero")
			}
			return key, nil
		}
	}
	return nil, errors.New("wallet: grinding found no Stark key in 100000 tries")
}

// PublicKey is the Stark public key (the x coordinate), what the account
// contract stores.
func (a *StarknetAccount) PublicKey() starknettx.Felt { return a.pub }

// Address is the account's address.
func (a *StarknetAccount) Address() starknettx.Felt { return a.addr }

// DeployAccount returns the DEPLOY_ACCOUNT transaction that deploys this
// account (the standard class, the public key as salt and constructor
// argument), unsigned, with nonce 0.
func (a *StarknetAccount) DeployAccount(bounds starknettx.ResourceBounds) *starknettx.DeployAccount {
	return &starknettx.DeployAccount{
		Common:              starknettx.Common{ResourceBounds: bounds},
		ClassHash:           starknettx.OZAccountClassHash,
		ContractAddressSalt: a.pub,
		ConstructorCalldata: []starknettx.Felt{a.pub},
	}
}

// SignInvoke sets tx's sender to this account and its signature to [r, s]
// over the transaction hash on chainID.
func (a *StarknetAccount) SignInvoke(tx *starknettx.Invoke, chainID starknettx.Felt) error {
	tx.SenderAddress = a.addr
	return a.sign(&tx.Common, tx.Hash(chainID))
}

// SignDeployAccount sets tx's signature to [r, s] over its hash on chainID.
func (a *StarknetAccount) SignDeployAccount(tx *starknettx.DeployAccount, chainID starknettx.Felt) error {
	return a.sign(&tx.Common, tx.Hash(chainID))
}

func (a *StarknetAccount) sign(c *starknettx.Common, hash starknettx.Felt) error {
	r, s, err := starknettx.Sign(a.priv, hash)
	if err != nil {
		return err
	}
	c.Signature = []starknettx.Felt{r, s}
	return nil
}

// SignHash signs a message hash (an off-chain typed-data hash, say) with
// the Stark key.
func (a *StarknetAccount) SignHash(hash starknettx.Felt) (r, s starknettx.Felt, err error) {
	return starknettx.Sign(a.priv, hash)
}

// String is the address in hex.
func (a *StarknetAccount) String() string { return starknettx.Hex(&a.addr) }

// GoString is the address too, so %#v shows no key.
func (a *StarknetAccount) GoString() string {
	return "wallet.StarknetAccount(" + starknettx.Hex(&a.addr) + ")"
}

// LogValue logs the address.
func (a *StarknetAccount) LogValue() slog.Value { return slog.StringValue(starknettx.Hex(&a.addr)) }
