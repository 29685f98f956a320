// Package transfer is the example behind `portico wallet`: one login of
// the auth SDK, as a wallet.Wallet, sends one transfer on each chain
// family through the gateway. Each account is funded from its devnet's
// faucet first, each transfer is waited for through a subscription, and
// one line per family tells the balances before and after, what was sent
// and the fee. It runs against `make run` (the embedded devnets behind the
// gateway).
package transfer

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strings"

	"github.com/coder/websocket"
	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/ws"

	"github.com/porticohq/portico/auth/wallet"
	"github.com/porticohq/portico/families/evm/evmdevnet"
	"github.com/porticohq/portico/families/starknet/starknetdevnet"
	"github.com/porticohq/portico/families/starknet/starknettx"
)

// URLs are the gateway's HTTP URLs of the three networks, a key in each;
// their WebSocket URLs are derived from them.
type URLs struct {
	EVM, Solana, Starknet string
}

// Run funds each family's account and sends its transfer, in the order
// EVM, slot chain, rollup, printing one line for each to out. The first
// error stops it, named by its family.
func Run(ctx context.Context, out io.Writer, w *wallet.Wallet, urls URLs) error {
	for _, c := range []chain{&evmChain{url: urls.EVM}, &solanaChain{url: urls.Solana}, &starknetChain{url: urls.Starknet}} {
		if err := runChain(ctx, out, c, w); err != nil {
			return fmt.Errorf("%s: %w", c.name(), err)
		}
	}
	return nil
}

// chain is one chain family as the example drives it through the
// gateway.
type chain interface {
	name() string
	unit() string
	connect(ctx context.Context) error
	close()
	balance(ctx context.Context, w *wallet.Wallet) (*big.Int, error)
	// fund tops the account up from the devnet's faucet and waits.
	fund(ctx context.Context, w *wallet.Wallet) error
	// transfer sends the example's transfer and waits until it is final.
	transfer(ctx context.Context, w *wallet.Wallet) (tx string, sent, fee *big.Int, err error)
}

// runChain funds, transfers and prints one family's line: the balance
// before the transfer, after it, what was sent and the fee, in base units.
func runChain(ctx context.Context, out io.Writer, f chain, w *wallet.Wallet) error {
	if err := f.connect(ctx); err != nil {
		return err
	}
	defer f.close()
	if err := f.fund(ctx, w); err != nil {
		return fmt.Errorf("funding from the faucet: %w", err)
	}
	before, err := f.balance(ctx, w)
	if err != nil {
		return err
	}
	tx, sent, fee, err := f.transfer(ctx, w)
	if err != nil {
		return fmt.Errorf("transfer: %w", err)
	}
	after, err := f.balance(ctx, w)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s: before %s after %s sent %s fee %s (%s) tx %s\n", f.name(), before, after, sent, fee, f.unit(), tx)
	return nil
}

// wsURL is the gateway's WebSocket URL of a network's HTTP URL.
func wsURL(u string) string {
	u = strings.Replace(u, "/v3/", "/ws/v3/", 1)
	return "ws" + strings.TrimPrefix(u, "http")
}

// recipient is a fixed 32-byte value the example sends to.
func recipient() []byte {
	sum := sha256.Sum256([]byte("portico wallet example recipient"))
	return sum[:]
}

// EVM: the faucet is the devnet's last dev account (traffic uses the
// first seven); transfers are EIP-1559; finality is the receipt in a
// block, waited for on newHeads.

const (
	evmFund     = 1_000_000_000_000_000_000 // 1 ETH
	evmTransfer = 10_000_000_000_000_000    // 0.01 ETH
)

type evmChain struct {
	url      string
	http, ws *ethclient.Client
	chainID  *big.Int
	// block holds the example's latest transaction: balances are read
	// there, since "latest" through the gateway is the head it tracks,
	// which may be a block behind the receipt.
	block *big.Int
}

func (f *evmChain) name() string { return "evm" }
func (f *evmChain) unit() string { return "wei" }

func (f *evmChain) connect(ctx context.Context) (err error) {
	if f.http, err = ethclient.DialContext(ctx, f.url); err != nil {
		return err
	}
	if f.ws, err = ethclient.DialContext(ctx, wsURL(f.url)); err != nil {
		return err
	}
	f.chainID, err = f.http.ChainID(ctx)
	return err
}

func (f *evmChain) close() {
	for _, c := range []*ethclient.Client{f.http, f.ws} {
		if c != nil {
			c.Close()
		}
	}
}

func (f *evmChain) balance(ctx context.Context, w *wallet.Wallet) (*big.Int, error) {
	return f.http.BalanceAt(ctx, w.EVM.Address(), f.block)
}

func (f *evmChain) fund(ctx context.Context, w *wallet.Wallet) error {
	d, err := evmdevnet.New(evmdevnet.Config{}) // derives the dev accounts; starts nothing
	if err != nil {
		return err
	}
	accts := d.Accounts()
	faucet := accts[len(accts)-1]
	_, err = f.send(ctx, faucet.Address, w.EVM.Address(), big.NewInt(evmFund), func(tx *types.Transaction) (*types.Transaction, error) {
		return types.SignTx(tx, types.LatestSignerForChainID(f.chainID), faucet.Key)
	})
	return err
}

func (f *evmChain) transfer(ctx context.Context, w *wallet.Wallet) (string, *big.Int, *big.Int, error) {
	to := common.BytesToAddress(recipient())
	value := big.NewInt(evmTransfer)
	r, err := f.send(ctx, w.EVM.Address(), to, value, func(tx *types.Transaction) (*types.Transaction, error) {
		return w.EVM.SignTx(tx, f.chainID)
	})
	if err != nil {
		return "", nil, nil, err
	}
	fee := new(big.Int).Mul(new(big.Int).SetUint64(r.GasUsed), r.EffectiveGasPrice)
	return r.TxHash.Hex(), value, fee, nil
}

// send sends an EIP-1559 transfer signed by sign and waits for its
// receipt.
func (f *evmChain) send(ctx context.Context, from, to common.Address, value *big.Int, sign func(*types.Transaction) (*types.Transaction, error)) (*types.Receipt, error) {
	nonce, err := f.http.PendingNonceAt(ctx, from)
	if err != nil {
		return nil, err
	}
	tip, err := f.http.SuggestGasTipCap(ctx)
	if err != nil {
		return nil, err
	}
	head, err := f.http.HeaderByNumber(ctx, nil)
	if err != nil {
		return nil, err
	}
	feeCap := new(big.Int).Add(new(big.Int).Mul(head.BaseFee, big.NewInt(2)), tip)
	tx, err := sign(types.NewTx(&types.DynamicFeeTx{ChainID: f.chainID, Nonce: nonce, GasTipCap: tip, GasFeeCap: feeCap, Gas: 21_000, To: &to, Value: value}))
	if err != nil {
		return nil, err
	}
	if err := f.http.SendTransaction(ctx, tx); err != nil {
		return nil, err
	}
	return f.wait(ctx, tx.Hash())
}

// wait returns the receipt once a new head holds it.
func (f *evmChain) wait(ctx context.Context, h common.Hash) (*types.Receipt, error) {
	heads := make(chan *types.Header, 16)
	sub, err := f.ws.SubscribeNewHead(ctx, heads)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	for {
		r, err := f.http.TransactionReceipt(ctx, h)
		switch {
		case err == nil && r.Status != types.ReceiptStatusSuccessful:
			return nil, fmt.Errorf("transaction %s failed", h.Hex())
		case err == nil:
			f.block = r.BlockNumber
			return r, nil
		case !errors.Is(err, ethereum.NotFound):
			return nil, err
		}
		select {
		case <-heads:
		case err := <-sub.Err():
			return nil, err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// The slot chain: the faucet is requestAirdrop, whose finality is the
// signature's finalized notification (signatureSubscribe); a transfer is
// sent by wallet.SolanaSender, which signs again when a blockhash expires.

const (
	solFund     = 1_000_000_000 // 1 SOL
	solTransfer = 10_000_000    // 0.01 SOL
)

type solanaChain struct {
	url string
	rpc *rpc.Client
	ws  *ws.Client
}

func (f *solanaChain) name() string { return "solana" }
func (f *solanaChain) unit() string { return "lamports" }

func (f *solanaChain) connect(ctx context.Context) (err error) {
	f.rpc = rpc.New(f.url)
	f.ws, err = ws.Connect(ctx, wsURL(f.url))
	return err
}

func (f *solanaChain) close() {
	if f.ws != nil {
		f.ws.Close()
	}
	if f.rpc != nil {
		f.rpc.Close()
	}
}

func (f *solanaChain) balance(ctx context.Context, w *wallet.Wallet) (*big.Int, error) {
	b, err := f.rpc.GetBalance(ctx, w.Solana.PublicKey(), rpc.CommitmentFinalized)
	if err != nil {
		return nil, err
	}
	return new(big.Int).SetUint64(b.Value), nil
}

func (f *solanaChain) fund(ctx context.Context, w *wallet.Wallet) error {
	sig, err := f.rpc.RequestAirdrop(ctx, w.Solana.PublicKey(), solFund, rpc.CommitmentFinalized)
	if err != nil {
		return err
	}
	return f.wait(ctx, sig)
}

func (f *solanaChain) transfer(ctx context.Context, w *wallet.Wallet) (string, *big.Int, *big.Int, error) {
	from, to := w.Solana.PublicKey(), solana.PublicKeyFromBytes(recipient())
	s := &wallet.SolanaSender{RPC: f.rpc, Commitment: rpc.CommitmentFinalized}
	sig, err := s.Send(ctx, from, w.Solana.SignTransaction, system.NewTransferInstruction(solTransfer, from, to).Build())
	if err != nil {
		return "", nil, nil, err
	}
	got, err := f.rpc.GetTransaction(ctx, sig, &rpc.GetTransactionOpts{Commitment: rpc.CommitmentFinalized})
	if err != nil {
		return "", nil, nil, err
	}
	return sig.String(), big.NewInt(solTransfer), new(big.Int).SetUint64(got.Meta.Fee), nil
}

// wait waits for the signature's finalized notification.
func (f *solanaChain) wait(ctx context.Context, sig solana.Signature) error {
	sub, err := f.ws.SignatureSubscribe(sig, rpc.CommitmentFinalized)
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	res, err := sub.Recv(ctx)
	if err != nil {
		return err
	}
	if res.Value.Err != nil {
		return fmt.Errorf("transaction %s failed: %v", sig, res.Value.Err)
	}
	return nil
}

// The rollup: the faucet is the devnet's faucet account (its key is a
// published test key), the user's account is deployed on first use, fees
// come from estimateFee, and finality is ACCEPTED_ON_L2 on
// starknet_subscribeTransactionStatus (ACCEPTED_ON_L1 follows L1Lag blocks
// later; a wallet treats L2 acceptance as done).

var (
	snFund     = big.NewInt(100_000_000_000_000_000) // 0.1 of the fee token
	snTransfer = big.NewInt(1_000_000_000_000_000)
)

type starknetChain struct {
	url     string
	chainID starknettx.Felt
	rpc     *Client
	faucet  *wallet.StarknetAccount
}

func (f *starknetChain) name() string { return "starknet" }
func (f *starknetChain) unit() string { return "fri" }

func (f *starknetChain) connect(ctx context.Context) (err error) {
	f.rpc = &Client{URL: f.url}
	var id string
	if err := f.rpc.Call(ctx, "starknet_chainId", []any{}, &id); err != nil {
		return err
	}
	if f.chainID, err = starknettx.ParseFelt(id); err != nil {
		return err
	}
	f.faucet, err = wallet.NewStarknetAccount(starknetdevnet.FaucetKey())
	return err
}

func (f *starknetChain) close() {}

func (f *starknetChain) balance(ctx context.Context, w *wallet.Wallet) (*big.Int, error) {
	return f.balanceOf(ctx, w.Starknet.Address())
}

// balanceOf reads an account's fee-token balance in the pending state.
func (f *starknetChain) balanceOf(ctx context.Context, addr starknettx.Felt) (*big.Int, error) {
	token := starknetdevnet.FeeToken()
	var res []string
	err := f.rpc.Call(ctx, "starknet_call", map[string]any{"request": map[string]any{
		"contract_address": starknettx.Hex(&token), "entry_point_selector": starknettx.Hex(ptr(starknettx.Selector("balanceOf"))),
		"calldata": []string{starknettx.Hex(&addr)}}, "block_id": "pending"}, &res)
	if err != nil {
		return nil, err
	}
	if len(res) != 2 {
		return nil, fmt.Errorf("balanceOf answered %v", res)
	}
	lo, _ := new(big.Int).SetString(strings.TrimPrefix(res[0], "0x"), 16)
	hi, _ := new(big.Int).SetString(strings.TrimPrefix(res[1], "0x"), 16)
	return lo.Add(lo, hi.Lsh(hi, 128)), nil
}

func ptr[T any](v T) *T { return &v }

// StarknetBalance reads an account's fee-token balance on the rollup
// network at url, in the pending state.
func StarknetBalance(ctx context.Context, url string, addr starknettx.Felt) (*big.Int, error) {
	return (&starknetChain{url: url, rpc: &Client{URL: url}}).balanceOf(ctx, addr)
}

func (f *starknetChain) fund(ctx context.Context, w *wallet.Wallet) error {
	if _, _, err := f.sendTransfer(ctx, f.faucet, w.Starknet.Address(), snFund); err != nil {
		return err
	}
	// Deploy the account on first use: it pays for its own deployment.
	if _, err := f.nonce(ctx, w.Starknet.Address()); err == nil {
		return nil
	} else if e := (*Error)(nil); !errors.As(err, &e) || e.Code != 20 { // 20: Contract not found
		return err
	}
	dep := w.Starknet.DeployAccount(starknettx.ResourceBounds{})
	bounds, err := f.bounds(ctx, func() (any, error) {
		q := *dep
		q.Query = true
		return &q, w.Starknet.SignDeployAccount(&q, f.chainID)
	})
	if err != nil {
		return err
	}
	dep.ResourceBounds = bounds
	if err := w.Starknet.SignDeployAccount(dep, f.chainID); err != nil {
		return err
	}
	var res struct {
		Hash string `json:"transaction_hash"`
	}
	if err := f.rpc.Call(ctx, "starknet_addDeployAccountTransaction", map[string]any{"deploy_account_transaction": dep}, &res); err != nil {
		return err
	}
	return f.wait(ctx, res.Hash)
}

func (f *starknetChain) transfer(ctx context.Context, w *wallet.Wallet) (string, *big.Int, *big.Int, error) {
	hash, fee, err := f.sendTransfer(ctx, w.Starknet, f.faucet.Address(), snTransfer)
	return hash, snTransfer, fee, err
}

func (f *starknetChain) nonce(ctx context.Context, addr starknettx.Felt) (uint64, error) {
	var n string
	if err := f.rpc.Call(ctx, "starknet_getNonce", map[string]any{"block_id": "pending", "contract_address": starknettx.Hex(&addr)}, &n); err != nil {
		return 0, err
	}
	v, err := starknettx.ParseFelt(n)
	return v.Uint64(), err
}

// sendTransfer sends the fee token's transfer from acct, waits, and
// returns the hash and the fee charged.
func (f *starknetChain) sendTransfer(ctx context.Context, acct *wallet.StarknetAccount, to starknettx.Felt, amount *big.Int) (string, *big.Int, error) {
	nonce, err := f.nonce(ctx, acct.Address())
	if err != nil {
		return "", nil, err
	}
	var amt starknettx.Felt
	amt.SetBigInt(amount)
	tx := &starknettx.Invoke{Common: starknettx.Common{Nonce: starknettx.FeltU64(nonce)},
		Calldata: []starknettx.Felt{starknettx.FeltU64(1), starknetdevnet.FeeToken(), starknettx.Selector("transfer"), starknettx.FeltU64(3), to, amt, {}}}
	bounds, err := f.bounds(ctx, func() (any, error) {
		q := *tx
		q.Query = true
		return &q, acct.SignInvoke(&q, f.chainID)
	})
	if err != nil {
		return "", nil, err
	}
	tx.ResourceBounds = bounds
	if err := acct.SignInvoke(tx, f.chainID); err != nil {
		return "", nil, err
	}
	var res struct {
		Hash string `json:"transaction_hash"`
	}
	if err := f.rpc.Call(ctx, "starknet_addInvokeTransaction", map[string]any{"invoke_transaction": tx}, &res); err != nil {
		return "", nil, err
	}
	if err := f.wait(ctx, res.Hash); err != nil {
		return "", nil, err
	}
	var rc struct {
		Fee struct {
			Amount string `json:"amount"`
		} `json:"actual_fee"`
	}
	if err := f.rpc.Call(ctx, "starknet_getTransactionReceipt", map[string]any{"transaction_hash": res.Hash}, &rc); err != nil {
		return "", nil, err
	}
	fee, _ := new(big.Int).SetString(strings.TrimPrefix(rc.Fee.Amount, "0x"), 16)
	return res.Hash, fee, nil
}

// bounds estimates a transaction from its query version, signed by
// query, and returns resource bounds with room: half again the gas, twice
// the prices.
func (f *starknetChain) bounds(ctx context.Context, query func() (any, error)) (starknettx.ResourceBounds, error) {
	var b starknettx.ResourceBounds
	q, err := query()
	if err != nil {
		return b, err
	}
	var est []struct {
		L2Gas      string `json:"l2_gas_consumed"`
		L2Price    string `json:"l2_gas_price"`
		DataGas    string `json:"l1_data_gas_consumed"`
		DataPrice  string `json:"l1_data_gas_price"`
		L1GasPrice string `json:"l1_gas_price"`
	}
	if err := f.rpc.Call(ctx, "starknet_estimateFee", map[string]any{"request": []any{q}, "simulation_flags": []string{}, "block_id": "pending"}, &est); err != nil {
		return b, err
	}
	if len(est) != 1 {
		return b, errors.New("estimateFee answered no estimate")
	}
	u := func(s string) uint64 {
		v, _ := new(big.Int).SetString(strings.TrimPrefix(s, "0x"), 16)
		return v.Uint64()
	}
	e := est[0]
	b.L2Gas.MaxAmount, b.L1DataGas.MaxAmount = u(e.L2Gas)*3/2, u(e.DataGas)*3/2
	b.L2Gas.MaxPricePerUnit.SetUint64(2 * u(e.L2Price))
	b.L1DataGas.MaxPricePerUnit.SetUint64(2 * u(e.DataPrice))
	b.L1Gas.MaxPricePerUnit.SetUint64(2 * u(e.L1GasPrice))
	return b, nil
}

// wait waits on starknet_subscribeTransactionStatus until the
// transaction is accepted on L2 (or L1).
func (f *starknetChain) wait(ctx context.Context, hash string) error {
	c, _, err := websocket.Dial(ctx, wsURL(f.url), nil)
	if err != nil {
		return err
	}
	defer c.CloseNow()
	c.SetReadLimit(1 << 20)
	sub, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "starknet_subscribeTransactionStatus", "params": map[string]string{"transaction_hash": hash}})
	if err := c.Write(ctx, websocket.MessageText, sub); err != nil {
		return err
	}
	for {
		_, msg, err := c.Read(ctx)
		if err != nil {
			return err
		}
		var m struct {
			Error  *Error `json:"error"`
			Params struct {
				Result struct {
					Status struct {
						Finality  string `json:"finality_status"`
						Execution string `json:"execution_status"`
					} `json:"status"`
				} `json:"result"`
			} `json:"params"`
		}
		if err := json.Unmarshal(msg, &m); err != nil {
			return err
		}
		if m.Error != nil {
			return m.Error
		}
		switch st := m.Params.Result.Status; {
		case st.Execution == "REVERTED" || st.Finality == "REJECTED":
			return fmt.Errorf("transaction %s %s", hash, strings.ToLower(st.Execution+st.Finality))
		case st.Finality == "ACCEPTED_ON_L2" || st.Finality == "ACCEPTED_ON_L1":
			c.Close(websocket.StatusNormalClosure, "")
			return nil
		}
	}
}
