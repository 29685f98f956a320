package solanadevnet

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/gagliardetto/solana-go"
)

// maxPermittedDataLength is the largest account the system program
// allocates (10 MiB).
const maxPermittedDataLength = 10 << 20

// system runs the system program's createAccount, assign, transfer and
// allocate. Its other instructions (nonces, seeds) are not implemented and
// fail with InvalidInstructionData.
func (x *txExec) system(accts []uint16, data []byte) *ixError {
	if len(data) < 4 {
		return errInvalidData
	}
	d := data[4:]
	switch binary.LittleEndian.Uint32(data) {
	case 0: // CreateAccount{lamports, space, owner}
		if len(d) != 48 {
			return errInvalidData
		}
		if len(accts) < 2 {
			return errNotEnoughKeys
		}
		lamports, space := binary.LittleEndian.Uint64(d), binary.LittleEndian.Uint64(d[8:])
		owner := solana.PublicKeyFromBytes(d[16:48])
		from, to := accts[0], accts[1]
		if !x.signer(from) || !x.signer(to) {
			return errMissingSignature
		}
		if t := x.acct(to); t.Lamports > 0 || len(t.Data) > 0 || t.Owner != systemProgram {
			x.log(fmt.Sprintf("Create Account: account Address { address: %s, base: None } already in use", x.keys[to]))
			return custom(0)
		}
		if space > maxPermittedDataLength {
			return custom(3)
		}
		if err := x.transfer(from, to, lamports); err != nil {
			return err
		}
		t := x.acct(to)
		t.Data = make([]byte, space)
		t.Owner = owner
		return nil
	case 1: // Assign{owner}
		if len(d) != 32 {
			return errInvalidData
		}
		if len(accts) < 1 {
			return errNotEnoughKeys
		}
		a := x.acct(accts[0])
		owner := solana.PublicKeyFromBytes(d)
		if a.Owner == owner {
			return nil
		}
		if !x.signer(accts[0]) {
			x.log(fmt.Sprintf("Assign: account %s must sign", x.keys[accts[0]]))
			return errMissingSignature
		}
		if !x.write[accts[0]] {
			return errReadonlyData
		}
		a.Owner = owner
		return nil
	case 2: // Transfer{lamports}
		if len(d) != 8 {
			return errInvalidData
		}
		if len(accts) < 2 {
			return errNotEnoughKeys
		}
		return x.transfer(accts[0], accts[1], binary.LittleEndian.Uint64(d))
	case 8: // Allocate{space}
		if len(d) != 8 {
			return errInvalidData
		}
		if len(accts) < 1 {
			return errNotEnoughKeys
		}
		i := accts[0]
		if !x.signer(i) {
			x.log(fmt.Sprintf("Allocate: 'to' account %s must sign", x.keys[i]))
			return errMissingSignature
		}
		a := x.acct(i)
		if len(a.Data) > 0 || a.Owner != systemProgram {
			x.log(fmt.Sprintf("Allocate: account Address { address: %s, base: None } already in use", x.keys[i]))
			return custom(0)
		}
		space := binary.LittleEndian.Uint64(d)
		if space > maxPermittedDataLength {
			return custom(3)
		}
		if !x.write[i] {
			return errReadonlyData
		}
		a.Data = make([]byte, space)
		return nil
	}
	return errInvalidData
}

// transfer is the system program's transfer with its checks and logs.
func (x *txExec) transfer(from, to uint16, lamports uint64) *ixError {
	if !x.signer(from) {
		x.log(fmt.Sprintf("Transfer: `from` account %s must sign", x.keys[from]))
		return errMissingSignature
	}
	f := x.acct(from)
	if len(f.Data) > 0 {
		x.log("Transfer: `from` must not carry data")
		return errInvalidArgument
	}
	if f.Lamports < lamports {
		x.log(fmt.Sprintf("Transfer: insufficient lamports %d, need %d", f.Lamports, lamports))
		return custom(1)
	}
	return x.move(from, to, lamports)
}

// Vote account data, the devnet's own compact layout (a real node keeps a
// full VoteState here): last voted slot, credits epoch, credits, node
// identity (the authorized voter), commission.
const voteDataLen = 57

type voteState struct {
	lastVote uint64
	epoch    uint64
	credits  uint64
	node     solana.PublicKey
	comm     uint8
}

func decodeVote(d []byte) (voteState, bool) {
	if len(d) != voteDataLen {
		return voteState{}, false
	}
	return voteState{
		lastVote: binary.LittleEndian.Uint64(d),
		epoch:    binary.LittleEndian.Uint64(d[8:]),
		credits:  binary.LittleEndian.Uint64(d[16:]),
		node:     solana.PublicKeyFromBytes(d[24:56]),
		comm:     d[56],
	}, true
}

func (v voteState) encode() []byte {
	d := make([]byte, voteDataLen)
	binary.LittleEndian.PutUint64(d, v.lastVote)
	binary.LittleEndian.PutUint64(d[8:], v.epoch)
	binary.LittleEndian.PutUint64(d[16:], v.credits)
	copy(d[24:56], v.node[:])
	d[56] = v.comm
	return d
}

// creditsIn returns the credits a vote account earned in epoch e.
func (v voteState) creditsIn(e uint64) uint64 {
	if v.epoch != e {
		return 0
	}
	return v.credits
}

// vote runs the vote program's Vote instruction (the one real validators'
// votes used before tower sync): one credit per vote on a newer slot whose
// hash matches.
func (x *txExec) vote(accts []uint16, data []byte) *ixError {
	v, ok := decodeVoteIx(data)
	if !ok {
		return errInvalidData
	}
	if len(accts) < 4 {
		return errNotEnoughKeys
	}
	acct := x.acct(accts[0])
	if acct.Owner != voteProgram {
		return errInvalidOwner
	}
	vs, ok := decodeVote(acct.Data)
	if !ok {
		return errInvalidAcctData
	}
	if x.keys[accts[3]] != vs.node || !x.signer(accts[3]) {
		return errMissingSignature
	}
	if len(v.slots) == 0 {
		return custom(3) // EmptySlots
	}
	last := v.slots[len(v.slots)-1]
	if last <= vs.lastVote {
		return custom(0) // VoteTooOld
	}
	b := x.st.recentBlock(last)
	if b == nil {
		return custom(1) // SlotsMismatch
	}
	if b.Hash != v.hash {
		return custom(2) // SlotHashMismatch
	}
	if !x.write[accts[0]] {
		return errReadonlyData
	}
	e := x.st.epoch()
	vs.credits = vs.creditsIn(e) + 1
	vs.epoch = e
	vs.lastVote = last
	acct.Data = vs.encode()
	return nil
}

// voteIx is a decoded Vote instruction.
type voteIx struct {
	slots     []uint64
	hash      solana.Hash
	timestamp *int64
}

func decodeVoteIx(data []byte) (voteIx, bool) {
	var v voteIx
	if len(data) < 12 || binary.LittleEndian.Uint32(data) != 2 {
		return v, false
	}
	n := binary.LittleEndian.Uint64(data[4:])
	d := data[12:]
	if n > uint64(len(d))/8 {
		return v, false
	}
	for range n {
		v.slots = append(v.slots, binary.LittleEndian.Uint64(d))
		d = d[8:]
	}
	if len(d) < 33 {
		return v, false
	}
	copy(v.hash[:], d[:32])
	switch d[32] {
	case 0:
		d = d[33:]
	case 1:
		if len(d) < 41 {
			return v, false
		}
		ts := int64(binary.LittleEndian.Uint64(d[33:]))
		v.timestamp = &ts
		d = d[41:]
	default:
		return v, false
	}
	return v, len(d) == 0
}

// encodeVoteIx builds the data of a Vote instruction.
func encodeVoteIx(slots []uint64, hash solana.Hash, ts int64) []byte {
	d := binary.LittleEndian.AppendUint32(nil, 2)
	d = binary.LittleEndian.AppendUint64(d, uint64(len(slots)))
	for _, s := range slots {
		d = binary.LittleEndian.AppendUint64(d, s)
	}
	d = append(d, hash[:]...)
	d = append(d, 1)
	return binary.LittleEndian.AppendUint64(d, uint64(ts))
}

// memo runs the SPL memo program (v2): every account must sign and the
// data must be UTF-8. It is an on-chain program, so it reports compute
// units.
func (x *txExec) memo(accts []uint16, data []byte) (uint64, *ixError) {
	cost := uint64(3000 + 40*len(data) + 1000*len(accts))
	for _, a := range accts {
		if !x.signer(a) {
			x.log("Program log: Signature missing")
			return cost, errMissingSignature
		}
	}
	if !utf8.Valid(data) {
		x.log("Program log: Invalid UTF-8")
		return cost, errInvalidData
	}
	x.log(fmt.Sprintf("Program log: Memo (len %d): %s", len(data), strconv.Quote(string(data))))
	return cost, nil
}

// Address lookup table account layout (as the real program stores it).
const (
	tableMetaSize = 56
	maxTableSize  = 256
)

type lookupTable struct {
	deactivation uint64
	lastExtended uint64
	startIndex   uint8
	authority    *solana.PublicKey
	addresses    []solana.PublicKey
}

func decodeTable(d []byte) (lookupTable, error) {
	var t lookupTable
	if len(d) < tableMetaSize || binary.LittleEndian.Uint32(d) != 1 || (len(d)-tableMetaSize)%32 != 0 {
		return t, fmt.Errorf("not a lookup table")
	}
	t.deactivation = binary.LittleEndian.Uint64(d[4:])
	t.lastExtended = binary.LittleEndian.Uint64(d[12:])
	t.startIndex = d[20]
	if d[21] == 1 {
		a := solana.PublicKeyFromBytes(d[22:54])
		t.authority = &a
	}
	for o := tableMetaSize; o < len(d); o += 32 {
		t.addresses = append(t.addresses, solana.PublicKeyFromBytes(d[o:o+32]))
	}
	return t, nil
}

func (t lookupTable) encode() []byte {
	d := make([]byte, tableMetaSize, tableMetaSize+32*len(t.addresses))
	binary.LittleEndian.PutUint32(d, 1)
	binary.LittleEndian.PutUint64(d[4:], t.deactivation)
	binary.LittleEndian.PutUint64(d[12:], t.lastExtended)
	d[20] = t.startIndex
	if t.authority != nil {
		d[21] = 1
		copy(d[22:54], t.authority[:])
	}
	for _, a := range t.addresses {
		d = append(d, a[:]...)
	}
	return d
}

// lookupTable runs the address lookup table program's createLookupTable
// and extendLookupTable, with the system program calls the real program
// makes as inner instructions. Freeze, deactivate and close are not
// implemented and fail with InvalidInstructionData.
func (x *txExec) lookupTable(accts []uint16, data []byte, height int) *ixError {
	if len(data) < 4 {
		return errInvalidData
	}
	d := data[4:]
	sysIdx, ok := x.index(systemProgram)
	switch binary.LittleEndian.Uint32(data) {
	case 0: // CreateLookupTable{recent_slot, bump_seed}
		if len(d) != 9 {
			return errInvalidData
		}
		if len(accts) < 4 {
			return errNotEnoughKeys
		}
		tbl, auth, payer := accts[0], accts[1], accts[2]
		recent, bump := binary.LittleEndian.Uint64(d), d[8]
		t := x.acct(tbl)
		if t.Owner == lookupTableProgram {
			x.log("Program log: Table account must not be allocated")
			return errAlreadyInit
		}
		if !x.signer(payer) {
			x.log("Program log: Payer account must be a signer")
			return errMissingSignature
		}
		if x.st.recentBlock(recent) == nil {
			x.log(fmt.Sprintf("Program log: %d is not a recent slot", recent))
			return errInvalidData
		}
		var slotLE [8]byte
		binary.LittleEndian.PutUint64(slotLE[:], recent)
		derived, err := solana.CreateProgramAddress([][]byte{x.keys[auth][:], slotLE[:], {bump}}, lookupTableProgram)
		if err != nil || derived != x.keys[tbl] {
			x.log(fmt.Sprintf("Program log: Table address must match derived address: %s", derived))
			return errInvalidArgument
		}
		if !ok {
			return errNotEnoughKeys
		}
		need := rentExempt(tableMetaSize)
		if need > t.Lamports {
			if err := x.cpiTransfer(sysIdx, payer, tbl, need-t.Lamports, height); err != nil {
				return err
			}
		}
		alloc := binary.LittleEndian.AppendUint32(nil, 8)
		alloc = binary.LittleEndian.AppendUint64(alloc, tableMetaSize)
		if err := x.cpi(sysIdx, []uint16{tbl}, alloc, height, func() *ixError {
			x.acct(tbl).Data = make([]byte, tableMetaSize)
			return nil
		}); err != nil {
			return err
		}
		assign := binary.LittleEndian.AppendUint32(nil, 1)
		assign = append(assign, lookupTableProgram[:]...)
		if err := x.cpi(sysIdx, []uint16{tbl}, assign, height, func() *ixError {
			x.acct(tbl).Owner = lookupTableProgram
			return nil
		}); err != nil {
			return err
		}
		a := x.keys[auth]
		x.acct(tbl).Data = lookupTable{deactivation: math.MaxUint64, authority: &a}.encode()
		return nil
	case 2: // ExtendLookupTable{new_addresses}
		if len(d) < 8 {
			return errInvalidData
		}
		n := binary.LittleEndian.Uint64(d)
		if n > uint64(len(d)-8)/32 || uint64(len(d)-8) != 32*n {
			return errInvalidData
		}
		if len(accts) < 2 {
			return errNotEnoughKeys
		}
		tbl, auth := accts[0], accts[1]
		ta := x.acct(tbl)
		if ta.Owner != lookupTableProgram {
			return errInvalidOwner
		}
		t, err := decodeTable(ta.Data)
		if err != nil {
			return errInvalidAcctData
		}
		if t.authority == nil {
			x.log("Program log: Lookup table is frozen")
			return &ixError{json: `"Immutable"`, msg: "Account is immutable"}
		}
		if *t.authority != x.keys[auth] {
			return &ixError{json: `"IncorrectAuthority"`, msg: "Incorrect authority provided"}
		}
		if !x.signer(auth) {
			x.log("Program log: Authority account must be a signer")
			return errMissingSignature
		}
		if t.deactivation != math.MaxUint64 {
			x.log("Program log: Deactivated tables cannot be extended")
			return errInvalidArgument
		}
		if n == 0 {
			x.log("Program log: Must extend with at least one address")
			return errInvalidData
		}
		if len(t.addresses)+int(n) > maxTableSize {
			x.log(fmt.Sprintf("Program log: Extended lookup table length %d would exceed max capacity of %d", len(t.addresses)+int(n), maxTableSize))
			return errInvalidData
		}
		if t.lastExtended != x.st.slot() {
			t.lastExtended = x.st.slot()
			t.startIndex = uint8(len(t.addresses))
		}
		for o := uint64(8); o < uint64(len(d)); o += 32 {
			t.addresses = append(t.addresses, solana.PublicKeyFromBytes(d[o:o+32]))
		}
		if !x.write[tbl] {
			return errReadonlyData
		}
		ta.Data = t.encode()
		need := rentExempt(len(ta.Data))
		if need > ta.Lamports {
			if len(accts) < 4 || !ok {
				return errNotEnoughKeys
			}
			if err := x.cpiTransfer(sysIdx, accts[2], tbl, need-ta.Lamports, height); err != nil {
				return err
			}
		}
		return nil
	}
	return errInvalidData
}

// cpiTransfer is a system transfer invoked by a program.
func (x *txExec) cpiTransfer(sys, from, to uint16, lamports uint64, height int) *ixError {
	data := binary.LittleEndian.AppendUint32(nil, 2)
	data = binary.LittleEndian.AppendUint64(data, lamports)
	return x.cpi(sys, []uint16{from, to}, data, height, func() *ixError {
		return x.transfer(from, to, lamports)
	})
}

// cpi records and runs a system program call made by the program at
// height, with the system program's logs and compute units. The program's
// own signer (a PDA) needs no signature, so run applies the effect
// directly.
func (x *txExec) cpi(sys uint16, accts []uint16, data []byte, height int, run func() *ixError) *ixError {
	x.inner = append(x.inner, innerIx{ProgramIDIndex: sys, Accounts: accts, Data: data, StackHeight: height + 1})
	id := x.keys[sys]
	x.log(fmt.Sprintf("Program %s invoke [%d]", id, height+1))
	x.cu += systemCU
	if err := run(); err != nil {
		x.log(fmt.Sprintf("Program %s failed: %s", id, err.msg))
		return err
	}
	x.log(fmt.Sprintf("Program %s success", id))
	return nil
}

// index returns the position of key in the transaction's accounts.
func (x *txExec) index(key solana.PublicKey) (uint16, bool) {
	for i, k := range x.keys {
		if k == key {
			return uint16(i), true
		}
	}
	return 0, false
}
