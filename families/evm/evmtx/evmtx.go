// Package evmtx builds, signs and sends EVM transactions of every type (0
// legacy, 1 access list, 2 dynamic fee, 3 blob, 4 set code) to any node
// through go-ethereum's ethclient. The embedded devnet uses it for its
// traffic and the tests use it against anvil, so both chains carry the same
// kinds of transactions.
package evmtx

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/crypto/kzg4844"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/holiman/uint256"
)

// StorageInit is init code that writes slot 0 = 42 and slot 1 = 7 and
// leaves no code: a contract whose storage proofs have something to walk.
var StorageInit = common.FromHex("602a600055600760015500")

// EmitterTopic is the topic of the log an Emitter contract writes.
var EmitterTopic = common.HexToHash("0x" + strings.Repeat("ab", 32))

// EmitterInit is init code of a contract that, on any call, writes one
// log with topic EmitterTopic and the word 42 as data: something for logs
// subscriptions to see.
var EmitterInit = common.FromHex("602c600c60003960" + "2c6000f3" + "602a600052" + "7f" + strings.Repeat("ab", 32) + "60206000a100")

// Sender sends transactions signed with Keys. Each transaction type uses its
// own key, so the nonces of a round never race each other. At least six
// keys are needed.
type Sender struct {
	Client  *ethclient.Client
	ChainID *big.Int
	Keys    []*ecdsa.PrivateKey

	// The blob and its proofs are the same every round and cost about a
	// second to compute: made once.
	sidecarsOnce sync.Once
	sidecars     []*types.BlobTxSidecar
	sidecarsErr  error
}

// Round sends one transaction of each type, 0 to 4, and returns their
// hashes in type order.
func (s *Sender) Round(ctx context.Context) ([]common.Hash, error) {
	if len(s.Keys) < 6 {
		return nil, fmt.Errorf("evmtx: need 6 keys, have %d", len(s.Keys))
	}
	fees, err := s.fees(ctx)
	if err != nil {
		return nil, err
	}
	to := crypto.PubkeyToAddress(s.Keys[0].PublicKey)
	builders := []func(nonce uint64) (types.TxData, error){
		func(n uint64) (types.TxData, error) {
			return &types.LegacyTx{Nonce: n, GasPrice: fees.cap, Gas: 21000, To: &to, Value: big.NewInt(1)}, nil
		},
		func(n uint64) (types.TxData, error) {
			return &types.AccessListTx{ChainID: s.ChainID, Nonce: n, GasPrice: fees.cap, Gas: 30000, To: &to, Value: big.NewInt(2),
				AccessList: types.AccessList{{Address: to, StorageKeys: []common.Hash{{}}}}}, nil
		},
		func(n uint64) (types.TxData, error) {
			return &types.DynamicFeeTx{ChainID: s.ChainID, Nonce: n, GasTipCap: fees.tip, GasFeeCap: fees.cap, Gas: 30000, To: &to, Value: big.NewInt(3),
				Data: []byte("portico")}, nil
		},
		nil, // blob: sent by blob below, with its sidecar
		func(n uint64) (types.TxData, error) {
			// The authority is key 5: it delegates its code to key 0's
			// address; the transaction itself comes from key 4.
			authority := s.Keys[5]
			an, err := s.Client.PendingNonceAt(ctx, crypto.PubkeyToAddress(authority.PublicKey))
			if err != nil {
				return nil, err
			}
			auth, err := types.SignSetCode(authority, types.SetCodeAuthorization{
				ChainID: *uint256.MustFromBig(s.ChainID), Address: to, Nonce: an,
			})
			if err != nil {
				return nil, err
			}
			return &types.SetCodeTx{ChainID: uint256.MustFromBig(s.ChainID), Nonce: n,
				GasTipCap: uint256.MustFromBig(fees.tip), GasFeeCap: uint256.MustFromBig(fees.cap), Gas: 100000,
				To: to, Value: uint256.NewInt(4), AuthList: []types.SetCodeAuthorization{auth}}, nil
		},
	}
	var hashes []common.Hash
	for ty, build := range builders {
		var tx *types.Transaction
		var err error
		if ty == types.BlobTxType {
			tx, err = s.blob(ctx, fees, to)
		} else {
			tx, err = s.send(ctx, s.Keys[ty], build)
		}
		if err != nil {
			return hashes, fmt.Errorf("evmtx: type %d: %w", ty, err)
		}
		hashes = append(hashes, tx.Hash())
	}
	return hashes, nil
}

// Deploy sends a contract creation with init code from key and returns the
// transaction hash and the contract's address.
func (s *Sender) Deploy(ctx context.Context, key *ecdsa.PrivateKey, init []byte) (common.Hash, common.Address, error) {
	fees, err := s.fees(ctx)
	if err != nil {
		return common.Hash{}, common.Address{}, err
	}
	from := crypto.PubkeyToAddress(key.PublicKey)
	// Gas schedules change with forks: ask the node.
	gas, err := s.Client.EstimateGas(ctx, ethereum.CallMsg{From: from, Data: init})
	if err != nil {
		return common.Hash{}, common.Address{}, err
	}
	var addr common.Address
	tx, err := s.send(ctx, key, func(n uint64) (types.TxData, error) {
		addr = crypto.CreateAddress(from, n)
		return &types.DynamicFeeTx{ChainID: s.ChainID, Nonce: n, GasTipCap: fees.tip, GasFeeCap: fees.cap, Gas: gas * 12 / 10, Data: init}, nil
	})
	if err != nil {
		return common.Hash{}, common.Address{}, err
	}
	return tx.Hash(), addr, nil
}

// Call sends a call to a contract from key and returns its hash.
func (s *Sender) Call(ctx context.Context, key *ecdsa.PrivateKey, to common.Address) (common.Hash, error) {
	fees, err := s.fees(ctx)
	if err != nil {
		return common.Hash{}, err
	}
	tx, err := s.send(ctx, key, func(n uint64) (types.TxData, error) {
		return &types.DynamicFeeTx{ChainID: s.ChainID, Nonce: n, GasTipCap: fees.tip, GasFeeCap: fees.cap, Gas: 100_000, To: &to}, nil
	})
	if err != nil {
		return common.Hash{}, err
	}
	return tx.Hash(), nil
}

type fees struct{ tip, cap *big.Int }

// fees picks a tip of 1 gwei and a fee cap well above the base fee.
func (s *Sender) fees(ctx context.Context) (fees, error) {
	head, err := s.Client.HeaderByNumber(ctx, nil)
	if err != nil {
		return fees{}, err
	}
	tip := big.NewInt(1_000_000_000)
	base := head.BaseFee
	if base == nil {
		base = big.NewInt(1_000_000_000)
	}
	return fees{tip: tip, cap: new(big.Int).Add(new(big.Int).Mul(base, big.NewInt(2)), tip)}, nil
}

// send signs the transaction built for key's next nonce and sends it.
func (s *Sender) send(ctx context.Context, key *ecdsa.PrivateKey, build func(nonce uint64) (types.TxData, error)) (*types.Transaction, error) {
	nonce, err := s.Client.PendingNonceAt(ctx, crypto.PubkeyToAddress(key.PublicKey))
	if err != nil {
		return nil, err
	}
	data, err := build(nonce)
	if err != nil {
		return nil, err
	}
	tx, err := types.SignNewTx(key, types.LatestSignerForChainID(s.ChainID), data)
	if err != nil {
		return nil, err
	}
	return tx, s.Client.SendTransaction(ctx, tx)
}

// blob sends a type 3 transaction carrying one blob. Nodes past Osaka want
// cell proofs in the sidecar, earlier ones a blob proof: the cell-proof form
// is tried first and the other on a sidecar-version refusal.
func (s *Sender) blob(ctx context.Context, f fees, to common.Address) (*types.Transaction, error) {
	s.sidecarsOnce.Do(func() { s.sidecars, s.sidecarsErr = makeSidecars() })
	if s.sidecarsErr != nil {
		return nil, s.sidecarsErr
	}
	var lastErr error
	for _, sc := range s.sidecars {
		tx, err := s.send(ctx, s.Keys[3], func(n uint64) (types.TxData, error) {
			return &types.BlobTx{ChainID: uint256.MustFromBig(s.ChainID), Nonce: n,
				GasTipCap: uint256.MustFromBig(f.tip), GasFeeCap: uint256.MustFromBig(f.cap), Gas: 21000,
				To: to, BlobFeeCap: uint256.NewInt(1_000_000_000), BlobHashes: sc.BlobHashes(), Sidecar: sc}, nil
		})
		if err == nil {
			return tx, nil
		}
		lastErr = err
		if !strings.Contains(strings.ToLower(err.Error()), "version") && !strings.Contains(strings.ToLower(err.Error()), "proof") {
			break
		}
	}
	return nil, errors.Join(errors.New("blob transaction refused"), lastErr)
}

// makeSidecars returns one blob with both proof forms: cell proofs
// (version 1) first, then the blob proof (version 0).
func makeSidecars() ([]*types.BlobTxSidecar, error) {
	var blob kzg4844.Blob
	copy(blob[:], "portico blob")
	commit, err := kzg4844.BlobToCommitment(&blob)
	if err != nil {
		return nil, err
	}
	cellProofs, err := kzg4844.ComputeCellProofs(&blob)
	if err != nil {
		return nil, err
	}
	blobProof, err := kzg4844.ComputeBlobProof(&blob, commit)
	if err != nil {
		return nil, err
	}
	return []*types.BlobTxSidecar{
		types.NewBlobTxSidecar(types.BlobSidecarVersion1, []kzg4844.Blob{blob}, []kzg4844.Commitment{commit}, cellProofs),
		types.NewBlobTxSidecar(types.BlobSidecarVersion0, []kzg4844.Blob{blob}, []kzg4844.Commitment{commit}, []kzg4844.Proof{blobProof}),
	}, nil
}
