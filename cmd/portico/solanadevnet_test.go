package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	bin "github.com/gagliardetto/binary"
	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/jsonrpc"

	"github.com/porticohq/portico/auth/wallet"
	"github.com/porticohq/portico/config"
)

// TestSolanaDevnetThroughGateway runs `portico serve` with the embedded
// slot-chain devnet and drives it with solana-go's rpc client through the
// gateway: an airdrop, a signed transfer that lands in a block, and getBlock
// of that block with every option of the seed, types checked.
func TestSolanaDevnetThroughGateway(t *testing.T) {
	cfg := config.DefaultConfig()
	cfg.Networks = []config.Network{{Name: "solana-devnet", Family: "solana", Devnet: config.Devnet{BlockPeriod: 40 * time.Millisecond}}}
	s := start(t, cfg)
	c := rpc.New(s.url(t, "solana-devnet"))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	// requestAirdrop funds a new account; its transfer lands in a block.
	payer, err := solana.NewRandomPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	// On a loaded machine an airdrop's blockhash (40 ms slots) may expire
	// before it lands: a careful client asks again, and one of them lands.
	landed := false
	for tries := 0; tries < 4 && !landed; tries++ {
		airdrop, err := c.RequestAirdrop(ctx, payer.PublicKey(), 2*solana.LAMPORTS_PER_SOL, rpc.CommitmentConfirmed)
		if err != nil {
			t.Fatal(err)
		}
		landed = reached(ctx, c, airdrop, 15*time.Second)
	}
	bal, err := c.GetBalance(ctx, payer.PublicKey(), rpc.CommitmentConfirmed)
	if err != nil || !landed || bal.Value < 2*solana.LAMPORTS_PER_SOL || bal.Value%(2*solana.LAMPORTS_PER_SOL) != 0 {
		t.Fatalf("balance after airdrop: %v %v (landed %v)", bal, err, landed)
	}

	// A transfer signed here, sent through the gateway (above the
	// rent-exempt minimum, which the devnet enforces) as a careful wallet
	// sends it: signed against a confirmed blockhash, sent again while
	// unseen, signed again if the blockhash expires.
	to := solana.NewWallet().PublicKey()
	var signed solana.Signature
	sender := &wallet.SolanaSender{RPC: c, Commitment: rpc.CommitmentFinalized,
		Signed: func(tx *solana.Transaction) error { signed = tx.Signatures[0]; return nil }}
	sig, err := sender.Send(ctx, payer.PublicKey(), func(tx *solana.Transaction) error {
		_, err := tx.Sign(func(k solana.PublicKey) *solana.PrivateKey {
			if k == payer.PublicKey() {
				return &payer
			}
			return nil
		})
		return err
	}, system.NewTransferInstruction(1_000_000, payer.PublicKey(), to).Build())
	if err != nil {
		t.Fatal(err)
	}
	if sig != signed {
		t.Fatalf("sendTransaction returned %s, want %s", sig, signed)
	}
	waitStatus(ctx, t, c, sig, rpc.ConfirmationStatusFinalized)
	got, err := c.GetTransaction(ctx, sig, &rpc.GetTransactionOpts{Commitment: rpc.CommitmentFinalized})
	if err != nil {
		t.Fatal(err)
	}
	slot := got.Slot
	if got.Meta == nil || got.Meta.Err != nil || got.Meta.Fee != 5000 {
		t.Fatalf("transfer meta: %+v", got.Meta)
	}
	if pre, post := got.Meta.PreBalances, got.Meta.PostBalances; pre[0]-post[0] != 1_000_000+5000 || post[1]-pre[1] != 1_000_000 {
		t.Fatalf("balances %v → %v", pre, post)
	}

	v0 := uint64(0)
	yes, no := true, false
	for _, commitment := range []rpc.CommitmentType{rpc.CommitmentFinalized, rpc.CommitmentConfirmed, rpc.CommitmentProcessed} {
		for _, rewards := range []*bool{nil, &yes, &no} {
			for _, details := range []rpc.TransactionDetailsType{rpc.TransactionDetailsFull, rpc.TransactionDetailsAccounts, rpc.TransactionDetailsSignatures, rpc.TransactionDetailsNone} {
				for _, enc := range []solana.EncodingType{solana.EncodingJSON, solana.EncodingJSONParsed, solana.EncodingBase58, solana.EncodingBase64} {
					name := fmt.Sprintf("%s/rewards=%s/%s/%s", commitment, boolName(rewards), details, enc)
					opts := &rpc.GetBlockOpts{Encoding: enc, TransactionDetails: details, Rewards: rewards, Commitment: commitment, MaxSupportedTransactionVersion: &v0}
					checkBlock(ctx, t, c, name, slot, opts, sig)
				}
			}
		}
	}

	// processed reaches the embedded devnet: the newest block is served at
	// processed and not yet at finalized.
	t.Run("processed", func(t *testing.T) {
		var last uint64
		for tries := 0; ; tries++ {
			newest, err := c.GetSlot(ctx, rpc.CommitmentProcessed)
			if err != nil {
				t.Fatal(err)
			}
			if newest == last {
				// The gateway answers getSlot from its tracked heads: a
				// newer slot comes with the next poll.
				tries--
				select {
				case <-ctx.Done():
					t.Fatal(ctx.Err())
				case <-time.After(20 * time.Millisecond):
				}
				continue
			}
			last = newest
			_, errP := c.GetBlockWithOpts(ctx, newest, &rpc.GetBlockOpts{Encoding: solana.EncodingBase64, MaxSupportedTransactionVersion: &v0, TransactionDetails: rpc.TransactionDetailsNone, Commitment: rpc.CommitmentProcessed})
			_, errF := c.GetBlockWithOpts(ctx, newest, &rpc.GetBlockOpts{Encoding: solana.EncodingBase64, MaxSupportedTransactionVersion: &v0, TransactionDetails: rpc.TransactionDetailsNone, Commitment: rpc.CommitmentFinalized})
			codeF, _ := rpcError(errF)
			if errP == nil && codeF == -32004 {
				return
			}
			// A processed block may be dropped (skipped) before the second
			// call; try a newer one.
			if tries == 20 {
				t.Fatalf("slot %d: processed %v, finalized %v", newest, errP, errF)
			}
		}
	})

	// Errors pass through from the node with its code and message.
	t.Run("errors", func(t *testing.T) {
		v0slot := findV0Block(ctx, t, c, slot)
		_, err := c.GetBlockWithOpts(ctx, v0slot, &rpc.GetBlockOpts{Encoding: solana.EncodingBase64})
		want := `Transaction version (0) is not supported by the requesting client. Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": 0`
		if code, msg := rpcError(err); code != -32015 || msg != want {
			t.Errorf("v0 without maxSupportedTransactionVersion: %d %q", code, msg)
		}
		far := slot + 1_000_000
		_, err = c.GetBlockWithOpts(ctx, far, &rpc.GetBlockOpts{Encoding: solana.EncodingBase64, MaxSupportedTransactionVersion: &v0})
		if code, msg := rpcError(err); code != -32004 || msg != fmt.Sprintf("Block not available for slot %d", far) {
			t.Errorf("future slot: %d %q", code, msg)
		}
		var res any
		err = c.RPCCallForInto(ctx, &res, "getBlock", []any{slot, map[string]any{"encoding": "hex"}})
		if code, msg := rpcError(err); code != -32602 || msg != `invalid params: param 2 (config.encoding): want one of json, jsonParsed, base58, base64, got string "hex"` {
			t.Errorf("bad encoding: %d %q", code, msg)
		}
	})
}

// checkBlock gets slot with opts and checks what came back against the
// options and the transfer sig.
func checkBlock(ctx context.Context, t *testing.T, c *rpc.Client, name string, slot uint64, opts *rpc.GetBlockOpts, sig solana.Signature) {
	t.Helper()
	var (
		header     rpc.GetBlockResult
		txCount    int
		sigs       []solana.Signature
		hasRewards bool
		rewardsOK  bool
		found      bool
	)
	if opts.Encoding == solana.EncodingJSONParsed {
		res, err := c.GetParsedBlockWithOpts(ctx, slot, opts)
		if err != nil || res == nil {
			t.Fatalf("%s: %v", name, err)
		}
		header = rpc.GetBlockResult{Blockhash: res.Blockhash, PreviousBlockhash: res.PreviousBlockhash, ParentSlot: res.ParentSlot, BlockTime: res.BlockTime, BlockHeight: res.BlockHeight}
		txCount, sigs, hasRewards = len(res.Transactions), res.Signatures, res.Rewards != nil
		rewardsOK = hasRewards && len(res.Rewards) > 0 && res.Rewards[0].RewardType == rpc.RewardTypeFee
		for _, tw := range res.Transactions {
			if tw.Transaction == nil || len(tw.Transaction.Signatures) == 0 || tw.Transaction.Signatures[0] != sig {
				continue
			}
			found = true
			if opts.TransactionDetails == rpc.TransactionDetailsFull {
				in := tw.Transaction.Message.Instructions[0]
				raw, err := json.Marshal(in.Parsed)
				var info rpc.InstructionInfo
				if err == nil {
					err = json.Unmarshal(raw, &info)
				}
				if err != nil || in.Program != "system" || info.InstructionType != "transfer" || info.Info["lamports"] != float64(1000000) {
					t.Fatalf("%s: parsed transfer %s %s (%v)", name, in.Program, raw, err)
				}
			}
		}
	} else {
		res, err := c.GetBlockWithOpts(ctx, slot, opts)
		if opts.Encoding == solana.EncodingJSON {
			// solana-go's GetBlockWithOpts refuses json; its generic call
			// decodes into the same type.
			cfg := map[string]any{"encoding": "json", "transactionDetails": opts.TransactionDetails,
				"commitment": opts.Commitment, "maxSupportedTransactionVersion": 0}
			if opts.Rewards != nil {
				cfg["rewards"] = *opts.Rewards
			}
			res = nil
			err = c.RPCCallForInto(ctx, &res, "getBlock", []any{slot, cfg})
		}
		if err != nil || res == nil {
			t.Fatalf("%s: %v", name, err)
		}
		header = *res
		txCount, sigs, hasRewards = len(res.Transactions), res.Signatures, res.Rewards != nil
		rewardsOK = hasRewards && len(res.Rewards) > 0 && res.Rewards[0].RewardType == rpc.RewardTypeFee
		for i, tw := range res.Transactions {
			switch {
			case opts.TransactionDetails == rpc.TransactionDetailsAccounts:
				var acc struct {
					Signatures  []solana.Signature `json:"signatures"`
					AccountKeys []struct {
						Pubkey   solana.PublicKey `json:"pubkey"`
						Signer   bool             `json:"signer"`
						Writable bool             `json:"writable"`
						Source   string           `json:"source"`
					} `json:"accountKeys"`
				}
				if err := json.Unmarshal(tw.Transaction.GetRawJSON(), &acc); err != nil || len(acc.AccountKeys) == 0 || acc.AccountKeys[0].Source != "transaction" {
					t.Fatalf("%s: tx %d accounts form %s (%v)", name, i, tw.Transaction.GetRawJSON(), err)
				}
				found = found || acc.Signatures[0] == sig
			case opts.Encoding == solana.EncodingJSON:
				var tx solana.Transaction
				if err := json.Unmarshal(tw.Transaction.GetRawJSON(), &tx); err != nil {
					t.Fatalf("%s: tx %d: %v", name, i, err)
				}
				found = found || tx.Signatures[0] == sig
			default:
				tx, err := solana.TransactionFromDecoder(bin.NewBinDecoder(tw.Transaction.GetBinary()))
				if err != nil {
					t.Fatalf("%s: tx %d decode: %v", name, i, err)
				}
				if err := tx.VerifySignatures(); err != nil {
					t.Fatalf("%s: tx %d: %v", name, i, err)
				}
				found = found || tx.Signatures[0] == sig
			}
			if tw.Meta == nil {
				t.Fatalf("%s: tx %d has no meta", name, i)
			}
		}
	}
	if header.Blockhash.IsZero() || header.PreviousBlockhash.IsZero() || header.ParentSlot >= slot || header.BlockTime == nil || header.BlockHeight == nil {
		t.Fatalf("%s: header %+v", name, header)
	}
	switch opts.TransactionDetails {
	case rpc.TransactionDetailsFull, rpc.TransactionDetailsAccounts:
		if txCount == 0 || sigs != nil || !found {
			t.Fatalf("%s: %d transactions, signatures %v, transfer found %v", name, txCount, sigs, found)
		}
	case rpc.TransactionDetailsSignatures:
		if txCount != 0 || !slices.Contains(sigs, sig) {
			t.Fatalf("%s: %d transactions, signatures %v", name, txCount, sigs)
		}
	case rpc.TransactionDetailsNone:
		if txCount != 0 || sigs != nil {
			t.Fatalf("%s: %d transactions, signatures %v", name, txCount, sigs)
		}
	}
	// The seed's default is no rewards; the leader's fee reward otherwise.
	if want := opts.Rewards != nil && *opts.Rewards; hasRewards != want || (want && !rewardsOK) {
		t.Fatalf("%s: rewards present %v, want %v", name, hasRewards, want)
	}
}

// waitStatus polls getSignatureStatuses through the gateway until sig
// reaches level.
func waitStatus(ctx context.Context, t *testing.T, c *rpc.Client, sig solana.Signature, level rpc.ConfirmationStatusType) {
	t.Helper()
	rank := map[rpc.ConfirmationStatusType]int{rpc.ConfirmationStatusProcessed: 1, rpc.ConfirmationStatusConfirmed: 2, rpc.ConfirmationStatusFinalized: 3}
	for {
		res, err := c.GetSignatureStatuses(ctx, true, sig)
		if err != nil {
			t.Fatal(err)
		}
		if st := res.Value[0]; st != nil {
			if st.Err != nil {
				t.Fatalf("%s failed: %v", sig, st.Err)
			}
			if rank[st.ConfirmationStatus] >= rank[level] {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s did not reach %s", sig, level)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// findV0Block walks finalized blocks from slot down until one holds a
// versioned transaction (the devnet's traffic sends them).
func findV0Block(ctx context.Context, t *testing.T, c *rpc.Client, from uint64) uint64 {
	t.Helper()
	v0 := uint64(0)
	for {
		blocks, err := c.GetBlocks(ctx, 1, nil, rpc.CommitmentFinalized)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range slices.Backward(blocks) {
			res, err := c.GetBlockWithOpts(ctx, s, &rpc.GetBlockOpts{Encoding: solana.EncodingBase64, MaxSupportedTransactionVersion: &v0, TransactionDetails: rpc.TransactionDetailsFull})
			if err != nil {
				t.Fatal(err)
			}
			for _, tw := range res.Transactions {
				if tw.Version == 0 {
					return s
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no block with a v0 transaction after slot %d", from)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func rpcError(err error) (int, string) {
	var re *jsonrpc.RPCError
	if !errors.As(err, &re) {
		return 0, fmt.Sprint(err)
	}
	return re.Code, re.Message
}

func boolName(b *bool) string {
	if b == nil {
		return "omitted"
	}
	return fmt.Sprint(*b)
}
