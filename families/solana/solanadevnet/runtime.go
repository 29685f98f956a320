package solanadevnet

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	"github.com/gagliardetto/solana-go"
)

// Fees and compute, as on mainnet.
const (
	lamportsPerSignature  = 5000
	defaultIxComputeLimit = 200_000
	builtinIxComputeLimit = 3_000
	maxComputeLimit       = 1_400_000

	systemCU        = 150
	voteCU          = 2100
	lookupTableCU   = 750
	computeBudgetCU = 150
)

// Program ids the devnet runs.
var (
	systemProgram        = solana.SystemProgramID
	voteProgram          = solana.VoteProgramID
	memoProgram          = solana.MemoProgramID
	lookupTableProgram   = solana.AddressLookupTableProgramID
	computeBudgetProgram = solana.ComputeBudget
)

// rentExempt is the minimum balance of an account holding n bytes.
func rentExempt(n int) uint64 { return uint64(128+n) * 3480 * 2 }

// txError is a transaction error: its JSON form as getBlock shows it under
// meta.err, and the text a failed preflight reports.
type txError struct {
	JSON string `json:"json"`
	Msg  string `json:"msg"`
}

// ixError is an instruction error: its JSON form inside InstructionError
// and the text of the program's "failed:" log line.
type ixError struct {
	json string
	msg  string
}

func custom(n uint32) *ixError {
	return &ixError{json: `{"Custom":` + strconv.FormatUint(uint64(n), 10) + `}`, msg: fmt.Sprintf("custom program error: 0x%x", n)}
}

var (
	errMissingSignature = &ixError{json: `"MissingRequiredSignature"`, msg: "missing required signature for instruction"}
	errInvalidData      = &ixError{json: `"InvalidInstructionData"`, msg: "invalid instruction data"}
	errNotEnoughKeys    = &ixError{json: `"NotEnoughAccountKeys"`, msg: "insufficient account keys for instruction"}
	errInvalidArgument  = &ixError{json: `"InvalidArgument"`, msg: "invalid program argument"}
	errInvalidOwner     = &ixError{json: `"InvalidAccountOwner"`, msg: "Invalid account owner"}
	errInvalidAcctData  = &ixError{json: `"InvalidAccountData"`, msg: "invalid account data for instruction"}
	errAlreadyInit      = &ixError{json: `"AccountAlreadyInitialized"`, msg: "instruction requires an uninitialized account"}
	errReadonlyLamports = &ixError{json: `"ReadonlyLamportChange"`, msg: "instruction changed the balance of a read-only account"}
	errReadonlyData     = &ixError{json: `"ReadonlyDataModified"`, msg: "instruction modified data of a read-only account"}
	errBudgetExceeded   = &ixError{json: `"ComputationalBudgetExceeded"`, msg: "Computational budget exceeded"}
)

// Transaction errors that keep a transaction out of a block.
var (
	errTxFee          = &txError{JSON: `"InsufficientFundsForFee"`, Msg: "Transaction results in an account (0) with insufficient funds for fee"}
	errTxNoPayer      = &txError{JSON: `"AccountNotFound"`, Msg: "Attempt to debit an account but found no record of a prior credit."}
	errTxBlockhash    = &txError{JSON: `"BlockhashNotFound"`, Msg: "Blockhash not found"}
	errTxProcessed    = &txError{JSON: `"AlreadyProcessed"`, Msg: "This transaction has already been processed"}
	errTxNoProgram    = &txError{JSON: `"ProgramAccountNotFound"`, Msg: "Attempt to load a program that does not exist"}
	errTxSanitize     = &txError{JSON: `"SanitizeFailure"`, Msg: "Transaction failed to sanitize accounts offsets correctly"}
	errTxLoadedTwice  = &txError{JSON: `"AccountLoadedTwice"`, Msg: "Account loaded twice"}
	errTxTableMissing = &txError{JSON: `"AddressLookupTableNotFound"`, Msg: "Transaction loads an address table account that doesn't exist"}
	errTxTableIndex   = &txError{JSON: `"InvalidAddressLookupTableIndex"`, Msg: "Transaction address table lookup uses an invalid index"}
	errTxTableOwner   = &txError{JSON: `"InvalidAddressLookupTableOwner"`, Msg: "Transaction loads an address table account with an invalid owner"}
	errTxBudget       = &txError{JSON: `"InvalidInstructionData"`, Msg: "Transaction contains an invalid compute budget instruction"}
)

// state is what a transaction reads: the block being built on top of the
// chain's tip.
type state interface {
	get(key solana.PublicKey) *account
	slot() uint64
	// recentBlock returns the block at slot if it is an ancestor of the
	// block being built, within the slot-hashes window (512 slots).
	recentBlock(slot uint64) *block
	epoch() uint64
}

// txExec runs one transaction.
type txExec struct {
	st     state
	keys   []solana.PublicKey
	nSig   int
	write  []bool
	work   map[solana.PublicKey]*account
	logs   []string
	inner  []innerIx
	cu     uint64
	limit  uint64
	topIdx uint16
}

// execute runs tx against st. It returns the transaction's meta and the
// accounts it changed, or a transaction error when the transaction cannot
// land at all (it is then dropped, as a leader drops it).
func execute(st state, tx *solana.Transaction) (*txMeta, map[solana.PublicKey]*account, *txError) {
	msg := &tx.Message
	h := msg.Header
	static := msg.AccountKeys
	if len(tx.Signatures) != int(h.NumRequiredSignatures) || h.NumRequiredSignatures == 0 ||
		int(h.NumRequiredSignatures) > len(static) || h.NumReadonlySignedAccounts >= h.NumRequiredSignatures ||
		int(h.NumRequiredSignatures)+int(h.NumReadonlyUnsignedAccounts) > len(static) {
		return nil, nil, errTxSanitize
	}
	keys := append([]solana.PublicKey(nil), static...)
	var lw, lr []solana.PublicKey
	if msg.IsVersioned() {
		for _, lu := range msg.AddressTableLookups {
			addrs, terr := tableAddresses(st, lu.AccountKey)
			if terr != nil {
				return nil, nil, terr
			}
			for _, i := range lu.WritableIndexes {
				if int(i) >= len(addrs) {
					return nil, nil, errTxTableIndex
				}
				lw = append(lw, addrs[i])
			}
			for _, i := range lu.ReadonlyIndexes {
				if int(i) >= len(addrs) {
					return nil, nil, errTxTableIndex
				}
				lr = append(lr, addrs[i])
			}
		}
		keys = append(keys, lw...)
		keys = append(keys, lr...)
	}
	if len(keys) > 256 {
		return nil, nil, errTxSanitize
	}
	seen := make(map[solana.PublicKey]bool, len(keys))
	for _, k := range keys {
		if seen[k] {
			return nil, nil, errTxLoadedTwice
		}
		seen[k] = true
	}
	write := writableFlags(msg, len(static), len(lw), len(lr), keys)

	// Programs must exist; compute budget instructions are read first.
	var limit, price uint64
	limitSet := false
	var defLimit uint64
	for _, ix := range msg.Instructions {
		if int(ix.ProgramIDIndex) >= len(keys) || ix.ProgramIDIndex == 0 {
			return nil, nil, errTxSanitize
		}
		for _, a := range ix.Accounts {
			if int(a) >= len(keys) {
				return nil, nil, errTxSanitize
			}
		}
		switch keys[ix.ProgramIDIndex] {
		case systemProgram, voteProgram, lookupTableProgram:
			defLimit += builtinIxComputeLimit
		case computeBudgetProgram:
			defLimit += builtinIxComputeLimit
			d := ix.Data
			switch {
			case len(d) == 5 && d[0] == 2:
				limit, limitSet = uint64(binary.LittleEndian.Uint32(d[1:])), true
			case len(d) == 9 && d[0] == 3:
				price = binary.LittleEndian.Uint64(d[1:])
			case len(d) == 5 && (d[0] == 1 || d[0] == 4):
			default:
				return nil, nil, errTxBudget
			}
		case memoProgram:
			defLimit += defaultIxComputeLimit
		default:
			return nil, nil, errTxNoProgram
		}
	}
	if !limitSet {
		limit = defLimit
	}
	limit = min(limit, maxComputeLimit)
	fee := uint64(len(tx.Signatures))*lamportsPerSignature + (price*limit+999_999)/1_000_000

	x := &txExec{st: st, keys: keys, nSig: int(h.NumRequiredSignatures), write: write, work: map[solana.PublicKey]*account{}, limit: limit}
	payer := x.acct(0)
	if payer.Lamports == 0 {
		return nil, nil, errTxNoPayer
	}
	if payer.Lamports < fee || (payer.Lamports-fee != 0 && payer.Lamports-fee < rentExempt(len(payer.Data))) {
		return nil, nil, errTxFee
	}
	pre := make([]uint64, len(keys))
	for i, k := range keys {
		if a := st.get(k); a != nil {
			pre[i] = a.Lamports
		}
	}
	payer.Lamports -= fee
	afterFee := *payer

	meta := &txMeta{Fee: fee, Pre: pre, LoadedW: lw, LoadedR: lr}
	var txErr *txError
	for i, ix := range msg.Instructions {
		x.topIdx = uint16(i)
		x.inner = nil
		ierr := x.invoke(ix.ProgramIDIndex, ix.Accounts, ix.Data, 1)
		if len(x.inner) > 0 {
			meta.Inner = append(meta.Inner, innerSet{Index: uint16(i), Ixs: x.inner})
		}
		if ierr != nil {
			txErr = &txError{
				JSON: `{"InstructionError":[` + strconv.Itoa(i) + `,` + ierr.json + `]}`,
				Msg:  fmt.Sprintf("Error processing Instruction %d: %s", i, ierr.msg),
			}
			break
		}
	}
	if txErr == nil {
		txErr = x.checkRent(pre)
	}
	changed := map[solana.PublicKey]*account{}
	if txErr != nil {
		// Only the fee sticks.
		a := afterFee
		changed[keys[0]] = &a
	} else {
		for i, k := range keys {
			if a, ok := x.work[k]; ok && write[i] {
				changed[k] = a
			}
		}
	}
	meta.Err = txErr
	meta.Logs = x.logs
	meta.CU = x.cu
	meta.Post = make([]uint64, len(keys))
	for i, k := range keys {
		switch a, ok := changed[k]; {
		case ok:
			meta.Post[i] = a.Lamports
		default:
			meta.Post[i] = pre[i]
		}
	}
	return meta, changed, nil
}

// writableFlags marks each key writable as the message header says, then
// demotes invoked programs and reserved accounts, as the runtime does.
func writableFlags(msg *solana.Message, nStatic, nLW, nLR int, keys []solana.PublicKey) []bool {
	h := msg.Header
	nReq := int(h.NumRequiredSignatures)
	w := make([]bool, len(keys))
	for i := range nStatic {
		if i < nReq {
			w[i] = i < nReq-int(h.NumReadonlySignedAccounts)
		} else {
			w[i] = i < nStatic-int(h.NumReadonlyUnsignedAccounts)
		}
	}
	for i := nStatic; i < nStatic+nLW; i++ {
		w[i] = true
	}
	for _, ix := range msg.Instructions {
		if int(ix.ProgramIDIndex) < len(w) {
			w[ix.ProgramIDIndex] = false
		}
	}
	for i, k := range keys {
		if isReserved(k) {
			w[i] = false
		}
	}
	return w
}

// isReserved reports whether a transaction can never write the account.
func isReserved(k solana.PublicKey) bool {
	switch k {
	case systemProgram, voteProgram, lookupTableProgram, computeBudgetProgram,
		solana.StakeProgramID, solana.ConfigProgramID, solana.BPFLoaderUpgradeableProgramID,
		solana.SysVarClockPubkey, solana.SysVarSlotHashesPubkey, solana.SysVarRentPubkey,
		solana.SysVarRecentBlockHashesPubkey, solana.SysVarEpochSchedulePubkey,
		solana.SysVarInstructionsPubkey, solana.SysVarStakeHistoryPubkey, solana.SysVarSlotHistoryPubkey,
		solana.SysVarRewardsPubkey, solana.SysVarFeesPubkey:
		return true
	}
	return false
}

// acct returns the working copy of keys[i].
func (x *txExec) acct(i uint16) *account {
	k := x.keys[i]
	if a, ok := x.work[k]; ok {
		return a
	}
	a := &account{Owner: systemProgram}
	if cur := x.st.get(k); cur != nil {
		*a = *cur
		a.Data = append([]byte(nil), cur.Data...)
	}
	x.work[k] = a
	return a
}

func (x *txExec) signer(i uint16) bool { return int(i) < x.nSig }

func (x *txExec) log(s string) { x.logs = append(x.logs, s) }

// invoke runs one instruction at a stack height, logging as the runtime
// does. Inner instructions (height > 1) are recorded.
func (x *txExec) invoke(prog uint16, accts []uint16, data []byte, height int) *ixError {
	id := x.keys[prog]
	if height > 1 {
		x.inner = append(x.inner, innerIx{ProgramIDIndex: prog, Accounts: accts, Data: data, StackHeight: height})
	}
	x.log(fmt.Sprintf("Program %s invoke [%d]", id, height))
	var err *ixError
	var cost uint64
	switch id {
	case systemProgram:
		cost = systemCU
		err = x.system(accts, data)
	case voteProgram:
		cost = voteCU
		err = x.vote(accts, data)
	case lookupTableProgram:
		cost = lookupTableCU
		err = x.lookupTable(accts, data, height)
	case computeBudgetProgram:
		cost = computeBudgetCU
	case memoProgram:
		cost, err = x.memo(accts, data)
	}
	if x.cu+cost > x.limit {
		x.cu = x.limit
		err = errBudgetExceeded
	} else {
		x.cu += cost
	}
	if id == memoProgram && err != errBudgetExceeded {
		x.log(fmt.Sprintf("Program %s consumed %d of %d compute units", id, cost, x.limit-(x.cu-cost)))
	}
	if err != nil {
		x.log(fmt.Sprintf("Program %s failed: %s", id, err.msg))
		return err
	}
	x.log(fmt.Sprintf("Program %s success", id))
	return nil
}

// checkRent refuses a transaction that leaves a writable account holding
// lamports below the rent-exempt minimum when it was not already so.
func (x *txExec) checkRent(pre []uint64) *txError {
	for i, k := range x.keys {
		a, ok := x.work[k]
		if !ok || !x.write[i] || a.Lamports == 0 || a.Lamports >= rentExempt(len(a.Data)) {
			continue
		}
		if pre[i] == 0 || pre[i] >= rentExempt(len(a.Data)) {
			return &txError{
				JSON: fmt.Sprintf(`{"InsufficientFundsForRent":{"account_index":%d}}`, i),
				Msg:  fmt.Sprintf("Transaction results in an account (%d) with insufficient funds for rent", i),
			}
		}
	}
	return nil
}

// move transfers lamports between two accounts of the instruction.
func (x *txExec) move(from, to uint16, lamports uint64) *ixError {
	if !x.write[from] || !x.write[to] {
		return errReadonlyLamports
	}
	f, t := x.acct(from), x.acct(to)
	if f.Lamports < lamports {
		return custom(1)
	}
	if t.Lamports > math.MaxUint64-lamports {
		return &ixError{json: `"ArithmeticOverflow"`, msg: "Program arithmetic overflowed"}
	}
	f.Lamports -= lamports
	t.Lamports += lamports
	return nil
}

// tableAddresses returns the addresses of a lookup table usable in the
// current slot: addresses added in this slot are not (they warm up).
func tableAddresses(st state, key solana.PublicKey) ([]solana.PublicKey, *txError) {
	a := st.get(key)
	if a == nil {
		return nil, errTxTableMissing
	}
	if a.Owner != lookupTableProgram {
		return nil, errTxTableOwner
	}
	t, err := decodeTable(a.Data)
	if err != nil || t.deactivation != math.MaxUint64 {
		return nil, errTxTableMissing
	}
	n := len(t.addresses)
	if t.lastExtended >= st.slot() {
		n = int(t.startIndex)
	}
	return t.addresses[:n], nil
}
