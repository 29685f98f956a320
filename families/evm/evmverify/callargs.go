package evmverify

import (
	stdjson "encoding/json"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/holiman/uint256"
)

// CallArgs is the call object of eth_call, eth_estimateGas and
// eth_createAccessList, as clients send it.
type CallArgs struct {
	From                 *common.Address              `json:"from,omitempty"`
	To                   *common.Address              `json:"to,omitempty"`
	Gas                  *hexutil.Uint64              `json:"gas,omitempty"`
	GasPrice             *hexutil.Big                 `json:"gasPrice,omitempty"`
	MaxFeePerGas         *hexutil.Big                 `json:"maxFeePerGas,omitempty"`
	MaxPriorityFeePerGas *hexutil.Big                 `json:"maxPriorityFeePerGas,omitempty"`
	MaxFeePerBlobGas     *hexutil.Big                 `json:"maxFeePerBlobGas,omitempty"`
	Value                *hexutil.Big                 `json:"value,omitempty"`
	Nonce                *hexutil.Uint64              `json:"nonce,omitempty"`
	Data                 *hexutil.Bytes               `json:"data,omitempty"`
	Input                *hexutil.Bytes               `json:"input,omitempty"`
	AccessList           *types.AccessList            `json:"accessList,omitempty"`
	BlobHashes           []common.Hash                `json:"blobVersionedHashes,omitempty"`
	ChainID              *hexutil.Big                 `json:"chainId,omitempty"`
	AuthorizationList    []types.SetCodeAuthorization `json:"authorizationList,omitempty"`
}

// ParseCallArgs decodes a call object.
func ParseCallArgs(raw []byte) (*CallArgs, error) {
	var a CallArgs
	if err := stdjson.Unmarshal(raw, &a); err != nil {
		return nil, err
	}
	if a.Data != nil && a.Input != nil && string(*a.Data) != string(*a.Input) {
		return nil, fmt.Errorf("both \"data\" and \"input\" are set and not equal")
	}
	return &a, nil
}

func (a *CallArgs) from() common.Address {
	if a.From == nil {
		return common.Address{}
	}
	return *a.From
}

func (a *CallArgs) data() []byte {
	if a.Input != nil {
		return *a.Input
	}
	if a.Data != nil {
		return *a.Data
	}
	return nil
}

// message turns the call into the message the EVM runs, as a node does
// for eth_call: fees of zero unless given (the base fee is then not
// enforced), the sender's nonce from state, no EOA or nonce checks, gas
// as given or gasCap.
func (a *CallArgs) message(baseFee *big.Int, nonce, gasCap uint64) *core.Message {
	var price, feeCap, tipCap *uint256.Int
	u := func(b *hexutil.Big) *uint256.Int {
		if b == nil {
			return new(uint256.Int)
		}
		v, _ := uint256.FromBig((*big.Int)(b))
		if v == nil {
			return new(uint256.Int).SetAllOne()
		}
		return v
	}
	if baseFee == nil || a.GasPrice != nil {
		price = u(a.GasPrice)
		feeCap, tipCap = price, price
	} else {
		feeCap, tipCap = u(a.MaxFeePerGas), u(a.MaxPriorityFeePerGas)
		price = new(uint256.Int)
		if feeCap.BitLen() > 0 || tipCap.BitLen() > 0 {
			price.Add(tipCap, uint256.MustFromBig(baseFee))
			if price.Cmp(feeCap) > 0 {
				price = feeCap
			}
		}
	}
	gas := gasCap
	if a.Gas != nil && uint64(*a.Gas) < gasCap {
		gas = uint64(*a.Gas)
	}
	if a.Nonce != nil {
		nonce = uint64(*a.Nonce)
	}
	var al types.AccessList
	if a.AccessList != nil {
		al = *a.AccessList
	}
	var blobFeeCap *uint256.Int
	if a.MaxFeePerBlobGas != nil {
		blobFeeCap = u(a.MaxFeePerBlobGas)
	}
	msg := &core.Message{
		From: a.from(), To: a.To, Value: u(a.Value), Nonce: nonce, GasLimit: gas,
		GasPrice: price, GasFeeCap: feeCap, GasTipCap: tipCap, Data: a.data(),
		AccessList: al, BlobGasFeeCap: blobFeeCap, BlobHashes: a.BlobHashes,
		SetCodeAuthorizations: a.AuthorizationList,
	}
	return msg.SkipNonceCheck().SkipEOACheck().SkipGasLimitCapCheck()
}
