package wallet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
)

// SolanaSender sends slot-chain transactions as a careful wallet does,
// and as the slot chain's own clients advise: each transaction is signed
// against a recent blockhash read at confirmed commitment (a processed
// block may still be abandoned, and its hash with it), sent again every
// Resend while nothing has seen it (a node may drop it, or a leader may
// miss it), and followed until it reaches Commitment. Once the chain's
// confirmed block height passes the blockhash's lastValidBlockHeight
// without the signature appearing, the transaction can never land: it is
// built again on a new blockhash and signed again, up to Signings times,
// and then Send says so (SolanaExpiredError) rather than wait forever.
//
// The zero value of every field but RPC works.
type SolanaSender struct {
	// RPC is the node, or the gateway, to send through.
	RPC *rpc.Client
	// Commitment is the level Send waits for; "" is confirmed.
	Commitment rpc.CommitmentType
	// Resend is how often a transaction that no block holds yet is sent
	// again while its blockhash is valid; 0 is 2 s.
	Resend time.Duration
	// Poll is how often its status and the block height are read; 0 is
	// 100 ms.
	Poll time.Duration
	// Signings bounds how many blockhashes a transaction is signed
	// against before Send gives up; 0 is 3.
	Signings int
	// Signed, when set, is called with each signed transaction before it
	// is first sent (a new one at each signing), so that a caller can
	// subscribe to its signature first.
	Signed func(*solana.Transaction) error
}

// SolanaExpiredError is a transaction whose blockhash expired, at every
// signing, before any block held it.
type SolanaExpiredError struct {
	// Signature is the last signing's signature.
	Signature solana.Signature
	// LastValidBlockHeight is the last signing's bound.
	LastValidBlockHeight uint64
	// Signings is how many blockhashes were tried.
	Signings int
}

// Error names the transaction and the bound it passed.
func (e *SolanaExpiredError) Error() string {
	return fmt.Sprintf("wallet: transaction %s expired: the chain passed block height %d without it (%d signings)", e.Signature, e.LastValidBlockHeight, e.Signings)
}

// SolanaTxError is a transaction that landed and failed: its fee was paid
// and nothing else changed.
type SolanaTxError struct {
	// Signature is the transaction's.
	Signature solana.Signature
	// Err is the chain's error, as getSignatureStatuses gives it.
	Err any
}

// Error names the transaction and the chain's error.
func (e *SolanaTxError) Error() string {
	return fmt.Sprintf("wallet: transaction %s failed: %v", e.Signature, e.Err)
}

// errExpired ends one signing whose blockhash expired.
var errExpired = errors.New("blockhash expired")

// Send builds a transaction of ixs paid by payer, has sign sign it, sends
// it and waits until it reaches s.Commitment, signing again on a new
// blockhash when one expires. It returns the signature of the transaction
// that landed. A transaction the node refuses at once (a bad signature,
// a failed simulation, too few lamports) is that error, unchanged; one
// that landed and failed is a *SolanaTxError.
func (s *SolanaSender) Send(ctx context.Context, payer solana.PublicKey, sign func(*solana.Transaction) error, ixs ...solana.Instruction) (solana.Signature, error) {
	signings := s.Signings
	if signings <= 0 {
		signings = 3
	}
	var expired SolanaExpiredError
	for range signings {
		bh, err := s.RPC.GetLatestBlockhash(ctx, rpc.CommitmentConfirmed)
		if err != nil {
			return solana.Signature{}, err
		}
		tx, err := solana.NewTransaction(ixs, bh.Value.Blockhash, solana.TransactionPayer(payer))
		if err != nil {
			return solana.Signature{}, err
		}
		if err := sign(tx); err != nil {
			return solana.Signature{}, err
		}
		if s.Signed != nil {
			if err := s.Signed(tx); err != nil {
				return solana.Signature{}, err
			}
		}
		err = s.follow(ctx, tx, bh.Value.LastValidBlockHeight)
		if !errors.Is(err, errExpired) {
			return tx.Signatures[0], err
		}
		expired.Signings++
		expired.Signature, expired.LastValidBlockHeight = tx.Signatures[0], bh.Value.LastValidBlockHeight
	}
	return expired.Signature, &expired
}

// follow sends tx, sends it again while no block holds it, and waits for
// it to reach the commitment, or for its blockhash to expire (errExpired).
func (s *SolanaSender) follow(ctx context.Context, tx *solana.Transaction, lastValid uint64) error {
	level, resend, poll := s.Commitment, s.Resend, s.Poll
	if level == "" {
		level = rpc.CommitmentConfirmed
	}
	if resend <= 0 {
		resend = 2 * time.Second
	}
	if poll <= 0 {
		poll = 100 * time.Millisecond
	}
	opts := rpc.TransactionOpts{PreflightCommitment: rpc.CommitmentConfirmed}
	sig := tx.Signatures[0]
	got, err := s.RPC.SendTransactionWithOpts(ctx, tx, opts)
	if err != nil {
		if strings.Contains(err.Error(), "Blockhash not found") {
			return errExpired // read from a node ahead of the one that took it, or too late
		}
		return err
	}
	if got != sig {
		return fmt.Errorf("wallet: the node answered signature %s for transaction %s", got, sig)
	}
	sent := time.Now()
	for {
		// The height first: a block that could still hold the
		// transaction is at most that high, so if it is past the bound
		// and the status read after it shows nothing, nothing ever will.
		height, err := s.RPC.GetBlockHeight(ctx, rpc.CommitmentConfirmed)
		if err != nil {
			return err
		}
		st, err := s.RPC.GetSignatureStatuses(ctx, false, sig)
		if err != nil {
			return err
		}
		if len(st.Value) == 1 && st.Value[0] != nil {
			if st.Value[0].Err != nil {
				return &SolanaTxError{Signature: sig, Err: st.Value[0].Err}
			}
			if reached(st.Value[0].ConfirmationStatus, level) {
				return nil
			}
		} else if height > lastValid {
			return errExpired
		} else if time.Since(sent) >= resend {
			// Dropped somewhere, or not yet seen: send it again. What the
			// node says to a repeat (already processed, already queued)
			// changes nothing; the status decides.
			_, _ = s.RPC.SendTransactionWithOpts(ctx, tx, rpc.TransactionOpts{SkipPreflight: true})
			sent = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}

// reached reports whether a transaction at status has reached level.
func reached(status rpc.ConfirmationStatusType, level rpc.CommitmentType) bool {
	rank := map[string]int{"processed": 1, "confirmed": 2, "finalized": 3}
	return rank[string(status)] >= rank[string(level)]
}
