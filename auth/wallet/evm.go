package wallet

import (
	"crypto/ecdsa"
	"fmt"
	"log/slog"
	"math/big"

	"github.com/ethereum/go-ethereum/accounts"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"
)

// EVMAccount is the login's account on EVM chains: the secp256k1 key and
// its address, as ethers' `new Wallet(privKey)` has them.
type EVMAccount struct {
	key  *ecdsa.PrivateKey
	addr common.Address
}

func newEVMAccount(priv []byte) (*EVMAccount, error) {
	key, err := crypto.ToECDSA(priv)
	if err != nil {
		return nil, &KeyError{Field: "privKey", Reason: "is not a secp256k1 private key"}
	}
	return &EVMAccount{key: key, addr: crypto.PubkeyToAddress(key.PublicKey)}, nil
}

// Address is the account's address.
func (a *EVMAccount) Address() common.Address { return a.addr }

// SignTx signs a transaction of any type the chain's current fork takes
// (legacy, access list, EIP-1559 dynamic fee, blob and EIP-7702 set-code)
// for chainID, with go-ethereum's latest signer.
func (a *EVMAccount) SignTx(tx *types.Transaction, chainID *big.Int) (*types.Transaction, error) {
	return types.SignTx(tx, types.LatestSignerForChainID(chainID), a.key)
}

// SignAuthorization signs an EIP-7702 authorization (delegating this
// account's code to auth.Address), for a set-code transaction's
// authorization list.
func (a *EVMAccount) SignAuthorization(auth types.SetCodeAuthorization) (types.SetCodeAuthorization, error) {
	return types.SignSetCode(a.key, auth)
}

// PersonalSign signs msg as personal_sign (EIP-191 version 0x45) does:
// 65 bytes r ‖ s ‖ v with v 27 or 28, as wallets and ethers' signMessage
// return it.
func (a *EVMAccount) PersonalSign(msg []byte) ([]byte, error) {
	return a.signHash(accounts.TextHash(msg))
}

// SignTypedData signs EIP-712 typed data (eth_signTypedData_v4), 65 bytes
// with v 27 or 28.
func (a *EVMAccount) SignTypedData(td apitypes.TypedData) ([]byte, error) {
	h, _, err := apitypes.TypedDataAndHash(td)
	if err != nil {
		return nil, fmt.Errorf("wallet: typed data: %w", err)
	}
	return a.signHash(h)
}

func (a *EVMAccount) signHash(h []byte) ([]byte, error) {
	sig, err := crypto.Sign(h, a.key)
	if err != nil {
		return nil, err
	}
	sig[64] += 27
	return sig, nil
}

// String is the checksummed address.
func (a *EVMAccount) String() string { return a.addr.Hex() }

// GoString is the address too, so %#v shows no key.
func (a *EVMAccount) GoString() string { return "wallet.EVMAccount(" + a.addr.Hex() + ")" }

// LogValue logs the address.
func (a *EVMAccount) LogValue() slog.Value { return slog.StringValue(a.addr.Hex()) }
