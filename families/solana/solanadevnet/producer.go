package solanadevnet

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/gagliardetto/solana-go"
)

// Genesis balances.
const (
	lamportsPerSOL  = 1_000_000_000
	faucetLamports  = 500_000_000 * lamportsPerSOL
	userLamports    = 10_000 * lamportsPerSOL
	nodeLamports    = 1_000 * lamportsPerSOL
	numTrafficUsers = 8
	// maxBlockTxs bounds a block's transactions from the mempool.
	maxBlockTxs = 4096
	// slotHashesWindow is how far back a vote or a lookup table's recent
	// slot may reach.
	slotHashesWindow = 512
	// inflationRate is the yearly inflation paid as epoch rewards.
	inflationRate = 0.05
)

// Loaders and sysvar owner, for genesis accounts.
var (
	nativeLoader = solana.MustPublicKeyFromBase58("NativeLoader1111111111111111111111111111111")
	sysvarOwner  = solana.MustPublicKeyFromBase58("Sysvar1111111111111111111111111111111111111")
)

// validator is a genesis validator: node identity (leader, fee payer of
// its votes, fee-reward recipient), vote account and stake account.
type validator struct {
	identity solana.PrivateKey
	vote     solana.PublicKey
	stake    solana.PublicKey
	lamports uint64 // stake
	comm     uint8
}

// devKeys are the devnet's deterministic keys.
type devKeys struct {
	faucet     solana.PrivateKey
	users      []solana.PrivateKey
	validators []validator
}

func devKey(name string) solana.PrivateKey {
	seed := sha256.Sum256([]byte("portico solana devnet " + name))
	return solana.PrivateKey(ed25519.NewKeyFromSeed(seed[:]))
}

func newDevKeys() devKeys {
	k := devKeys{faucet: devKey("faucet")}
	for i := range numTrafficUsers {
		k.users = append(k.users, devKey("user "+string(rune('a'+i))))
	}
	stakes := []uint64{500_000, 300_000, 200_000}
	comms := []uint8{10, 5, 8}
	for i, s := range stakes {
		name := "validator " + string(rune('a'+i))
		k.validators = append(k.validators, validator{
			identity: devKey(name + " identity"),
			vote:     devKey(name + " vote").PublicKey(),
			stake:    devKey(name + " stake").PublicKey(),
			lamports: s * lamportsPerSOL,
			comm:     comms[i],
		})
	}
	return k
}

// genesis builds the ledger at slot 0.
func (d *Devnet) genesis() *ledger {
	l := newLedger()
	put := func(k solana.PublicKey, a account) { l.base[k] = &a }
	for _, p := range []solana.PublicKey{systemProgram, voteProgram, lookupTableProgram, computeBudgetProgram, solana.StakeProgramID} {
		put(p, account{Lamports: 1, Owner: nativeLoader, Executable: true})
	}
	put(memoProgram, account{Lamports: 521_498_880, Owner: solana.BPFLoaderProgramID, Executable: true})
	put(solana.SysVarClockPubkey, account{Lamports: 1_169_280, Owner: sysvarOwner})
	put(solana.SysVarSlotHashesPubkey, account{Lamports: 143_487_360, Owner: sysvarOwner})
	put(d.keys.faucet.PublicKey(), account{Lamports: faucetLamports, Owner: systemProgram})
	for _, u := range d.keys.users {
		put(u.PublicKey(), account{Lamports: userLamports, Owner: systemProgram})
	}
	for _, v := range d.keys.validators {
		put(v.identity.PublicKey(), account{Lamports: nodeLamports, Owner: systemProgram})
		vs := voteState{node: v.identity.PublicKey(), comm: v.comm}
		put(v.vote, account{Lamports: rentExempt(voteDataLen) + lamportsPerSOL, Owner: voteProgram, Data: vs.encode()})
		put(v.stake, account{Lamports: v.lamports, Owner: solana.StakeProgramID, Data: append([]byte(nil), v.vote[:]...)})
	}
	gh := sha256.Sum256([]byte("portico solana devnet genesis"))
	l.genesisHash = solana.Hash(gh)
	g := &block{Slot: 0, Height: 0, Time: d.now().Unix(), Leader: d.keys.validators[0].identity.PublicKey()}
	g.Hash = blockHash(l.genesisHash, 0, nil)
	l.root, l.conf = g, g
	l.blocks[0] = g
	l.hashes[g.Hash] = 0
	return l
}

// epochOf returns a slot's epoch (no warm-up epochs).
func (d *Devnet) epochOf(slot uint64) uint64 { return slot / d.cfg.SlotsPerEpoch }

// leader returns the leader of a slot: stake-weighted, four slots in a
// row, fixed per epoch.
func (d *Devnet) leader(slot uint64) *validator {
	var seed [16]byte
	binary.LittleEndian.PutUint64(seed[:], d.epochOf(slot))
	binary.LittleEndian.PutUint64(seed[8:], slot/4)
	h := sha256.Sum256(seed[:])
	var total uint64
	for _, v := range d.keys.validators {
		total += v.lamports
	}
	pick := binary.LittleEndian.Uint64(h[:]) % total
	for i := range d.keys.validators {
		v := &d.keys.validators[i]
		if pick < v.lamports {
			return v
		}
		pick -= v.lamports
	}
	return &d.keys.validators[0]
}

// step moves to the next slot: perhaps abandons the unconfirmed tip,
// produces a block unless the leader skips, advances commitment, stores
// what became final and cleans up the ledger. The subscriptions hear of it
// once the ledger lock is released.
func (d *Devnet) step(ctx context.Context) {
	d.mu.Lock()
	notes := d.stepLocked(ctx)
	d.mu.Unlock()
	notes.send()
}

// stepLocked is step under d.mu; it returns the slot's notifications.
func (d *Devnet) stepLocked(ctx context.Context) batch {
	if d.closed && d.store == nil && d.led == nil {
		return nil
	}
	l := d.led
	next := l.slot + 1
	ev := &stepEvents{root: l.root.Slot}
	if tip := l.tip(); tip != l.root && tip.Slot+d.cfg.ConfirmDepth > next && d.rng.Float64() < d.cfg.DropRate {
		dropped := l.dropTip()
		ev.dropped = dropped
		var back []*pending
		for _, r := range dropped.Txs {
			if r.user {
				back = append(back, &pending{raw: r.Raw, tx: r.tx})
			}
		}
		d.mempool = append(back, d.mempool...)
	}
	l.slot = next
	if d.rng.Float64() >= d.cfg.SkipRate {
		ev.produced = d.produce(next)
	}
	oldConf := l.conf.Slot
	rooted := l.advance(d.cfg.ConfirmDepth, d.cfg.FinalizeDepth)
	ev.rooted = rooted
	for _, b := range slices.Concat(rooted, l.chain) {
		if b.Slot > oldConf && b.Slot <= l.conf.Slot {
			ev.confirmed = append(ev.confirmed, b)
		}
	}
	notes := d.subs.collect(l, ev)
	gone := l.cleanup(d.cfg.KeepSlots)
	if d.store != nil && (len(rooted) > 0 || len(gone) > 0) {
		if err := d.store.save(ctx, l, rooted, gone); err != nil {
			d.log.Warn("solana devnet: store", "err", err)
		}
	}
	for _, b := range rooted {
		b.delta = nil
	}
	close(d.slotCh)
	d.slotCh = make(chan struct{})
	return notes
}

// now is the time stamped on a new block; the caller holds mu.
func (d *Devnet) now() time.Time { return d.cfg.Now().Add(-d.behind) }

// warmUpSlots is how many slots warmUp expects to produce: a first block,
// then FinalizeDepth more slots for it to be finalized.
func (d *Devnet) warmUpSlots() uint64 { return d.cfg.FinalizeDepth + 1 }

// warmUp gives a new chain a history: it produces slots back to back until
// a block after the genesis is finalized, stamping them one period apart
// up to now (Start stamped the genesis warmUpSlots periods ago). A client's
// first getSlot at finalized commitment then names a block with votes and
// traffic, instead of the empty genesis for FinalizeDepth periods (about
// 13 s by default). A ledger loaded from DataDir already has its history.
func (d *Devnet) warmUp(ctx context.Context) error {
	n := d.warmUpSlots()
	for i := uint64(1); ; i++ {
		d.mu.Lock()
		done := d.led.root.Slot > 0
		d.behind = time.Duration(n-min(i, n)) * d.cfg.SlotPeriod
		if done {
			d.behind = 0
		}
		d.mu.Unlock()
		if done {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("solanadevnet: producing the first slots: %w", err)
		}
		d.step(ctx)
	}
}

// buildState is the state a block's transactions run against: the
// block's changes so far over the chain's tip.
type buildState struct {
	d     *Devnet
	l     *ledger
	b     *block
	delta map[solana.PublicKey]*account
}

func (s *buildState) get(k solana.PublicKey) *account {
	if a, ok := s.delta[k]; ok {
		return live(a)
	}
	return s.l.accountAt(k, processed)
}

func (s *buildState) slot() uint64  { return s.b.Slot }
func (s *buildState) epoch() uint64 { return s.d.epochOf(s.b.Slot) }

func (s *buildState) recentBlock(slot uint64) *block {
	if slot+slotHashesWindow < s.b.Slot || slot >= s.b.Slot {
		return nil
	}
	return s.l.blocks[slot]
}

func (s *buildState) credit(k solana.PublicKey, lamports uint64) uint64 {
	a := &account{Owner: systemProgram}
	if cur := s.get(k); cur != nil {
		c := *cur
		a = &c
	}
	a.Lamports += lamports
	s.delta[k] = a
	return a.Lamports
}

// produce builds the block of a slot on the tip: epoch rewards, votes,
// the mempool, traffic, then the leader's fee reward.
func (d *Devnet) produce(slot uint64) *block {
	l := d.led
	tip := l.tip()
	leader := d.leader(slot)
	b := &block{
		Slot: slot, ParentSlot: tip.Slot, Height: tip.Height + 1, PrevHash: tip.Hash,
		Time: d.now().Unix(), Leader: leader.identity.PublicKey(),
	}
	s := &buildState{d: d, l: l, b: b, delta: map[solana.PublicKey]*account{}}
	d.epochRewards(s, tip)

	var txs []*pending
	for _, v := range d.keys.validators {
		txs = append(txs, d.voteTx(v, tip))
	}
	n := min(len(d.mempool), maxBlockTxs)
	user := len(txs)
	txs = append(txs, d.mempool[:n]...)
	d.mempool = d.mempool[n:]
	userEnd := len(txs)
	if d.cfg.Traffic {
		txs = append(txs, d.trafficTxs(s, tip)...)
	}
	var feeShare uint64
	for i, p := range txs {
		if _, dup := l.sigs[p.tx.Signatures[0]]; dup {
			continue
		}
		if i >= user && i < userEnd {
			if _, ok := l.blockhashValid(p.tx.Message.RecentBlockhash); !ok {
				continue // expired, as a real leader drops it
			}
		}
		meta, changed, terr := execute(s, p.tx)
		if terr != nil {
			d.log.Debug("solana devnet: transaction dropped", "sig", p.tx.Signatures[0], "err", terr.Msg)
			continue
		}
		for k, a := range changed {
			s.delta[k] = a
		}
		base := uint64(len(p.tx.Signatures)) * lamportsPerSignature
		feeShare += base/2 + (meta.Fee - base)
		b.Txs = append(b.Txs, &txRecord{Raw: p.raw, Meta: *meta, tx: p.tx, user: i >= user && i < userEnd})
	}
	if feeShare > 0 {
		post := s.credit(b.Leader, feeShare)
		b.Rewards = append(b.Rewards, reward{Pubkey: b.Leader, Lamports: int64(feeShare), PostBalance: post, Type: "Fee"})
	}
	b.Hash = blockHash(tip.Hash, slot, b.Txs)
	b.TxCount = tip.TxCount + uint64(len(b.Txs))
	b.delta = s.delta
	l.addBlock(b)
	return b
}

// epochRewards pays, in an epoch's first block, each vote account its
// commission on the epoch's inflation rewards, and records the stake
// accounts' share, which the next block pays (one reward partition, as
// partitioned epoch rewards would do with a single partition).
func (d *Devnet) epochRewards(s *buildState, tip *block) {
	b := s.b
	if d.epochOf(b.Slot) > d.epochOf(tip.Slot) {
		prev := d.epochOf(b.Slot) - 1
		type share struct {
			v      *validator
			points float64
		}
		var shares []share
		var total, stake float64
		for i := range d.keys.validators {
			v := &d.keys.validators[i]
			va := s.get(v.vote)
			sa := s.get(v.stake)
			if va == nil || sa == nil {
				continue
			}
			vs, ok := decodeVote(va.Data)
			if !ok {
				continue
			}
			p := float64(sa.Lamports) * float64(vs.creditsIn(prev))
			shares = append(shares, share{v, p})
			total += p
			stake += float64(sa.Lamports)
		}
		if total == 0 {
			return
		}
		epochYears := (time.Duration(d.cfg.SlotsPerEpoch) * d.cfg.SlotPeriod).Hours() / (365.25 * 24)
		pool := stake * inflationRate * epochYears
		one := uint64(1)
		b.Partitions = &one
		for _, sh := range shares {
			r := uint64(pool * sh.points / total)
			comm := sh.v.comm
			voting := r * uint64(comm) / 100
			if voting > 0 {
				post := s.credit(sh.v.vote, voting)
				b.Rewards = append(b.Rewards, reward{Pubkey: sh.v.vote, Lamports: int64(voting), PostBalance: post, Type: "Voting", Commission: &comm})
			}
			if r-voting > 0 {
				b.Staking = append(b.Staking, reward{Pubkey: sh.v.stake, Lamports: int64(r - voting), Type: "Staking", Commission: &comm})
			}
		}
		return
	}
	if tip.Partitions != nil {
		for _, r := range tip.Staking {
			rr := r
			rr.PostBalance = s.credit(r.Pubkey, uint64(r.Lamports))
			b.Rewards = append(b.Rewards, rr)
		}
	}
}

// voteTx is a validator's vote on the tip, signed by its identity.
func (d *Devnet) voteTx(v validator, tip *block) *pending {
	ix := solana.NewInstruction(voteProgram, solana.AccountMetaSlice{
		solana.Meta(v.vote).WRITE(),
		solana.Meta(solana.SysVarSlotHashesPubkey),
		solana.Meta(solana.SysVarClockPubkey),
		solana.Meta(v.identity.PublicKey()).SIGNER(),
	}, encodeVoteIx([]uint64{tip.Slot}, tip.Hash, tip.Time))
	return mustSign([]solana.Instruction{ix}, tip.Hash, v.identity.PublicKey(), nil, v.identity)
}

// mustSign builds and signs a transaction made by the devnet itself; its
// inputs are always valid, so a failure is a bug.
func mustSign(ixs []solana.Instruction, recent solana.Hash, payer solana.PublicKey, tables map[solana.PublicKey]solana.PublicKeySlice, signers ...solana.PrivateKey) *pending {
	opts := []solana.TransactionOption{solana.TransactionPayer(payer)}
	if tables != nil {
		opts = append(opts, solana.TransactionAddressTables(tables))
	}
	tx, err := solana.NewTransaction(ixs, recent, opts...)
	if err != nil {
		panic("solanadevnet: building a transaction: " + err.Error())
	}
	if _, err := tx.Sign(func(k solana.PublicKey) *solana.PrivateKey {
		for i := range signers {
			if signers[i].PublicKey() == k {
				return &signers[i]
			}
		}
		return nil
	}); err != nil {
		panic("solanadevnet: signing a transaction: " + err.Error())
	}
	raw, err := tx.MarshalBinary()
	if err != nil {
		panic("solanadevnet: encoding a transaction: " + err.Error())
	}
	return &pending{raw: raw, tx: tx}
}
