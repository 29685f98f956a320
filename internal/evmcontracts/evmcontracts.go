// Package evmcontracts builds small EVM contracts for tests and
// benchmarks with go-ethereum's bytecode builder (solidity is not
// installed here): an ERC-20-like token, a reader that reads several of
// its slots and calls the token, and a log emitter. They are the same
// contracts verify's own tests deploy.
package evmcontracts

import (
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/core/vm/program"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/holiman/uint256"
)

// The two test contracts, written with go-ethereum's bytecode builder
// (solidity is not installed here). Forward jumps use a PUSH2 whose two
// bytes are filled in once the target's place is known.

// balanceOfSelector is ERC-20's balanceOf(address).
const balanceOfSelector = 0x70a08231

// selectorWord is a 4-byte selector at the top of a 32-byte word, as
// MSTORE needs it to land first in memory.
func selectorWord(sel uint32) *uint256.Int {
	return new(uint256.Int).Lsh(uint256.NewInt(uint64(sel)), 224)
}

// jumps fills forward jump targets after the code is laid out.
type jumps struct {
	p     *program.Program
	holes map[string][]int
	dests map[string]int
}

func newJumps() *jumps {
	return &jumps{p: program.New(), holes: map[string][]int{}, dests: map[string]int{}}
}

// to pushes the (later known) place of label.
func (j *jumps) to(label string) *program.Program {
	j.p.Op(vm.PUSH2)
	j.holes[label] = append(j.holes[label], j.p.Size())
	return j.p.Append([]byte{0, 0})
}

// here marks label at a JUMPDEST.
func (j *jumps) here(label string) {
	j.dests[label] = j.p.Size()
	j.p.Op(vm.JUMPDEST)
}

func (j *jumps) bytes() []byte {
	code := j.p.Bytes()
	for l, holes := range j.holes {
		for _, h := range holes {
			code[h], code[h+1] = byte(j.dests[l]>>8), byte(j.dests[l])
		}
	}
	return code
}

// tokenRuntime is an ERC-20-like balance book: balanceOf(a) returns
// sload(keccak256(a . 0)), the slot solidity gives mapping 0; any other
// selector reverts with Error("unknown selector").
func tokenRuntime() []byte {
	j := newJumps()
	p := j.p
	p.Push(0).Op(vm.CALLDATALOAD).Push(0xe0).Op(vm.SHR) // selector
	p.Push(uint32(balanceOfSelector)).Op(vm.EQ)
	j.to("balanceOf")
	p.Op(vm.JUMPI)
	// revert Error("unknown selector"): selector, offset, length, text.
	p.Push(selectorWord(0x08c379a0)).Push(0).Op(vm.MSTORE)
	p.Push(0x20).Push(4).Op(vm.MSTORE)
	p.Push(16).Push(0x24).Op(vm.MSTORE)
	text := new(uint256.Int).SetBytes(common.RightPadBytes([]byte("unknown selector"), 32))
	p.Push(text).Push(0x44).Op(vm.MSTORE)
	p.Push(0x64).Push(0).Op(vm.REVERT)
	j.here("balanceOf")
	p.Push(4).Op(vm.CALLDATALOAD).Push(0).Op(vm.MSTORE) // mem[0:32] = owner
	p.Push(0).Push(0x20).Op(vm.MSTORE)                  // mem[32:64] = 0 (the mapping's slot)
	p.Push(0x40).Push(0).Op(vm.KECCAK256, vm.SLOAD)
	p.Push(0).Op(vm.MSTORE)
	p.Return(0, 32)
	return j.bytes()
}

// BalanceSlot is where the token keeps owner's balance.
func BalanceSlot(owner common.Address) common.Hash {
	return crypto.Keccak256Hash(common.LeftPadBytes(owner[:], 32), make([]byte, 32))
}

// TokenInit deploys the token with the given balances.
func TokenInit(balances map[common.Address]uint64) []byte {
	p := program.New()
	for owner, v := range balances {
		p.Sstore(BalanceSlot(owner), v)
	}
	return p.ReturnViaCodeCopy(tokenRuntime()).Bytes()
}

// readerRuntime reads its slots 1, 2 and 3, calls the token at slot 0
// for the balance of the holder at slot 5 (STATICCALL balanceOf), and
// returns the four words. With calldata it also stores balance + slot 1
// into slot 4 (a write, for gas estimates that meet SSTORE's rules).
func readerRuntime() []byte {
	j := newJumps()
	p := j.p
	for i, slot := range []int{1, 2, 3} {
		p.Push(slot).Op(vm.SLOAD).Push(i * 0x20).Op(vm.MSTORE)
	}
	p.Push(selectorWord(balanceOfSelector)).Push(0x80).Op(vm.MSTORE)
	p.Push(5).Op(vm.SLOAD).Push(0x84).Op(vm.MSTORE)
	// staticcall(gas, token, in 0x80..0xa4, out 0x60..0x80)
	p.Push(0x20).Push(0x60).Push(0x24).Push(0x80)
	p.Push(0).Op(vm.SLOAD)
	p.Op(vm.GAS, vm.STATICCALL, vm.ISZERO)
	j.to("fail")
	p.Op(vm.JUMPI)
	p.Op(vm.CALLDATASIZE, vm.ISZERO)
	j.to("done")
	p.Op(vm.JUMPI)
	p.Push(0x60).Op(vm.MLOAD).Push(1).Op(vm.SLOAD, vm.ADD).Push(4).Op(vm.SSTORE)
	j.here("done")
	p.Return(0, 0x80)
	j.here("fail")
	p.Push(0).Push(0).Op(vm.REVERT)
	return j.bytes()
}

// ReaderInit deploys the reader over token for holder.
func ReaderInit(token, holder common.Address) []byte {
	p := program.New()
	p.Sstore(0, token)
	p.Sstore(1, 11).Sstore(2, 22).Sstore(3, 33)
	p.Sstore(5, holder)
	return p.ReturnViaCodeCopy(readerRuntime()).Bytes()
}

// BalanceOfCall is the calldata of balanceOf(owner).
func BalanceOfCall(owner common.Address) []byte {
	return append(new(big.Int).SetUint64(balanceOfSelector).FillBytes(make([]byte, 4)), common.LeftPadBytes(owner[:], 32)...)
}

// emitterRuntime emits three logs per call: LOG1, LOG2 and LOG3 over
// the 32 bytes of calldata (zero when none), with fixed topics and the
// caller as the last topic of LOG3.
func emitterRuntime() []byte {
	p := program.New()
	p.Push(0).Op(vm.CALLDATALOAD).Push(0).Op(vm.MSTORE)
	t1, t2 := common.HexToHash("0xaa"), common.HexToHash("0xbb")
	p.Push(t1).Push(32).Push(0).Op(vm.LOG1)
	p.Push(t2).Push(t1).Push(32).Push(0).Op(vm.LOG2)
	p.Op(vm.CALLER).Push(t2).Push(t1).Push(0).Push(0).Op(vm.LOG3)
	p.Op(vm.STOP)
	return p.Bytes()
}

// EmitterInit deploys the emitter.
func EmitterInit() []byte { return program.New().ReturnViaCodeCopy(emitterRuntime()).Bytes() }
