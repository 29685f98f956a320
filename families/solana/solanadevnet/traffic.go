package solanadevnet

import (
	"encoding/binary"
	"fmt"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"
)

// trafficState is what background traffic remembers between blocks: the
// address lookup table its v0 transactions use.
type trafficState struct {
	table solana.PublicKey
	n     uint64 // transactions made, for memos and fresh keys
}

// trafficTxs makes a few transactions for the block being built on tip:
// transfers (some with a memo, some with a priority fee), account
// creations, transfers that fail, and, once its lookup table is set up, v0
// transfers that load accounts through it.
func (d *Devnet) trafficTxs(s *buildState, tip *block) []*pending {
	users := d.keys.users
	var out []*pending
	if p := d.tableSetup(s, tip); p != nil {
		out = append(out, p)
	}
	count := 2 + d.rng.IntN(5)
	for range count {
		d.traffic.n++
		from := users[d.rng.IntN(len(users))]
		to := users[d.rng.IntN(len(users))]
		for to.PublicKey() == from.PublicKey() {
			to = users[d.rng.IntN(len(users))]
		}
		amount := 1000 + d.rng.Uint64N(100_000_000)
		transfer := system.NewTransferInstruction(amount, from.PublicKey(), to.PublicKey()).Build()
		switch k := d.rng.IntN(10); {
		case k < 3:
			out = append(out, mustSign([]solana.Instruction{transfer}, tip.Hash, from.PublicKey(), nil, from))
		case k < 5:
			note := fmt.Sprintf("portico devnet traffic #%d", d.traffic.n)
			// The memo program takes the raw UTF-8 text (solana-go's memo
			// builder prepends a length byte, which a real memo would keep).
			m := solana.NewInstruction(memoProgram, solana.AccountMetaSlice{solana.Meta(from.PublicKey()).SIGNER()}, []byte(note))
			out = append(out, mustSign([]solana.Instruction{transfer, m}, tip.Hash, from.PublicKey(), nil, from))
		case k == 5:
			fresh := devKey(fmt.Sprintf("fresh %d %d", d.cfg.Seed, d.traffic.n))
			space := uint64(d.rng.IntN(200))
			create := system.NewCreateAccountInstruction(rentExempt(int(space)), space, systemProgram, from.PublicKey(), fresh.PublicKey()).Build()
			out = append(out, mustSign([]solana.Instruction{create}, tip.Hash, from.PublicKey(), nil, from, fresh))
		case k == 6:
			// Fails: more lamports than anyone holds.
			fail := system.NewTransferInstruction(1<<62, from.PublicKey(), to.PublicKey()).Build()
			out = append(out, mustSign([]solana.Instruction{fail}, tip.Hash, from.PublicKey(), nil, from))
		case k == 7:
			limit := binary.LittleEndian.AppendUint32([]byte{2}, 1000)
			price := binary.LittleEndian.AppendUint64([]byte{3}, 5000)
			ixs := []solana.Instruction{
				solana.NewInstruction(computeBudgetProgram, nil, limit),
				solana.NewInstruction(computeBudgetProgram, nil, price),
				transfer,
			}
			out = append(out, mustSign(ixs, tip.Hash, from.PublicKey(), nil, from))
		default:
			if p := d.v0Transfer(s, tip, from, amount); p != nil {
				out = append(out, p)
			} else {
				out = append(out, mustSign([]solana.Instruction{transfer}, tip.Hash, from.PublicKey(), nil, from))
			}
		}
	}
	return out
}

// tableSetup creates the traffic's lookup table (authority and payer: the
// first user) and then extends it with the other users, one step per
// block, reading the table's state from the chain so that an abandoned
// block is simply redone.
func (d *Devnet) tableSetup(s *buildState, tip *block) *pending {
	owner := d.keys.users[0]
	if d.traffic.table != (solana.PublicKey{}) {
		a := s.get(d.traffic.table)
		if a != nil {
			t, err := decodeTable(a.Data)
			if err != nil || len(t.addresses) > 0 {
				return nil
			}
			var addrs []solana.PublicKey
			for _, u := range d.keys.users[1:] {
				addrs = append(addrs, u.PublicKey())
			}
			data := binary.LittleEndian.AppendUint32(nil, 2)
			data = binary.LittleEndian.AppendUint64(data, uint64(len(addrs)))
			for _, a := range addrs {
				data = append(data, a[:]...)
			}
			ix := solana.NewInstruction(lookupTableProgram, solana.AccountMetaSlice{
				solana.Meta(d.traffic.table).WRITE(),
				solana.Meta(owner.PublicKey()).SIGNER(),
				solana.Meta(owner.PublicKey()).SIGNER().WRITE(),
				solana.Meta(systemProgram),
			}, data)
			return mustSign([]solana.Instruction{ix}, tip.Hash, owner.PublicKey(), nil, owner)
		}
	}
	var slotLE [8]byte
	binary.LittleEndian.PutUint64(slotLE[:], tip.Slot)
	table, bump, err := solana.FindProgramAddress([][]byte{owner.PublicKey().Bytes(), slotLE[:]}, lookupTableProgram)
	if err != nil {
		return nil
	}
	d.traffic.table = table
	data := binary.LittleEndian.AppendUint32(nil, 0)
	data = binary.LittleEndian.AppendUint64(data, tip.Slot)
	data = append(data, bump)
	ix := solana.NewInstruction(lookupTableProgram, solana.AccountMetaSlice{
		solana.Meta(table).WRITE(),
		solana.Meta(owner.PublicKey()),
		solana.Meta(owner.PublicKey()).SIGNER().WRITE(),
		solana.Meta(systemProgram),
	}, data)
	return mustSign([]solana.Instruction{ix}, tip.Hash, owner.PublicKey(), nil, owner)
}

// v0Transfer is a v0 transaction whose recipient is loaded writable from
// the lookup table, with another table address loaded read-only. It
// returns nil until the table is usable.
func (d *Devnet) v0Transfer(s *buildState, tip *block, from solana.PrivateKey, amount uint64) *pending {
	if d.traffic.table == (solana.PublicKey{}) {
		return nil
	}
	addrs, terr := tableAddresses(s, d.traffic.table)
	if terr != nil || len(addrs) < 3 {
		return nil
	}
	var pick []solana.PublicKey
	for _, a := range addrs {
		if a != from.PublicKey() {
			pick = append(pick, a)
		}
	}
	i := d.rng.IntN(len(pick))
	to, ro := pick[i], pick[(i+1)%len(pick)]
	ix := solana.NewInstruction(systemProgram, solana.AccountMetaSlice{
		solana.Meta(from.PublicKey()).SIGNER().WRITE(),
		solana.Meta(to).WRITE(),
		solana.Meta(ro),
	}, binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint32(nil, 2), amount))
	tables := map[solana.PublicKey]solana.PublicKeySlice{d.traffic.table: addrs}
	return mustSign([]solana.Instruction{ix}, tip.Hash, from.PublicKey(), tables, from)
}
