package evmverify_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/porticohq/portico/families/evm/evmverify"
	"github.com/porticohq/portico/network/verify"
)

// proofCase is one recorded eth_getProof exchange of the conformance
// suite: the request's params and geth's answer.
type proofCase struct {
	name    string
	address common.Address
	slots   []common.Hash
	result  string
}

func proofCases(t testing.TB) []proofCase {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(fixtures, "tests", "eth_getProof", "*.io"))
	if len(files) == 0 {
		t.Fatal("no eth_getProof fixtures")
	}
	var out []proofCase
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		c := proofCase{name: filepath.Base(f)}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, ">> "):
				var req struct{ Params []json.RawMessage }
				if err := json.Unmarshal([]byte(line[3:]), &req); err != nil {
					t.Fatal(err)
				}
				json.Unmarshal(req.Params[0], &c.address)
				json.Unmarshal(req.Params[1], &c.slots)
			case strings.HasPrefix(line, "<< "):
				var resp struct{ Result json.RawMessage }
				if err := json.Unmarshal([]byte(line[3:]), &resp); err != nil {
					t.Fatal(err)
				}
				c.result = string(resp.Result)
			}
		}
		fh.Close()
		out = append(out, c)
	}
	return out
}

// TestVerifyProofFixtures checks geth's recorded eth_getProof answers
// against the state root of the chain file's head (every fixture asks at
// the head), then flips each hex digit of the answer in turn: every flip
// in a proof node, a field or a key must fail, and so must the answer
// against any other block's state root.
func TestVerifyProofFixtures(t *testing.T) {
	fc := loadFixture(t)
	root := fc.head().Root()
	for _, c := range proofCases(t) {
		t.Run(c.name, func(t *testing.T) {
			acc, err := evmverify.VerifyProof([]byte(c.result), root, c.address, c.slots)
			if err != nil {
				t.Fatal(err)
			}
			if !acc.Exists || acc.Balance.Uint64() != 0x76 || acc.CodeHash == types.EmptyCodeHash {
				t.Fatalf("account %+v", acc)
			}
			for _, s := range c.slots {
				if got, _ := acc.StorageJSON(s); string(got) != `"0x0000000000000000000000000000000000000000000000000000000000000038"` {
					t.Fatalf("slot %s = %s", s, got)
				}
			}
			flips := 0
			for i := 0; i < len(c.result); i++ {
				if !isHexDigit(c.result[i]) || (i > 0 && c.result[i-1] == '0' && c.result[i] == 'x') {
					continue
				}
				bad := []byte(c.result)
				bad[i] = otherHexDigit(bad[i])
				if _, err := evmverify.VerifyProof(bad, root, c.address, c.slots); err == nil {
					t.Fatalf("flip at %d (%q) verified: ...%s...", i, c.result[i], c.result[max(0, i-20):min(len(c.result), i+20)])
				}
				flips++
			}
			if flips < 1000 {
				t.Fatalf("only %d flips", flips)
			}
			for _, b := range fc.blocks[:len(fc.blocks)-1] {
				if b.Root() == root {
					continue
				}
				if _, err := evmverify.VerifyProof([]byte(c.result), b.Root(), c.address, c.slots); !errors.Is(err, verify.ErrMismatch) {
					t.Fatalf("verified against block %d's root: %v", b.NumberU64(), err)
				}
			}
		})
	}
}

func isHexDigit(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

func otherHexDigit(c byte) byte {
	if c == 'f' {
		return '0'
	}
	if c == '9' {
		return 'a'
	}
	return c + 1
}

// headState is the conformance suite's dump of the state at the head:
// an account list made by a tool apart from the node under test.
type headState struct {
	Root     string
	Accounts map[string]struct {
		Balance  string
		Nonce    json.Number
		CodeHash common.Hash
		Storage  map[common.Hash]string
	}
}

// TestVerifyProofLive asks a real node for a proof of every account of
// the head state with all its storage slots, verifies each against the
// chain file's head root and compares what was proven with the state
// dump; eth_getCode answers verify against the proven code hashes. An
// account and a slot that do not exist are proven absent.
func TestVerifyProofLive(t *testing.T) {
	fc := loadFixture(t)
	node := fixtureNode(t)
	head := fc.head()
	raw, err := os.ReadFile(filepath.Join(fixtures, "headstate.json"))
	if err != nil {
		t.Fatal(err)
	}
	var hs headState
	if err := json.Unmarshal(raw, &hs); err != nil {
		t.Fatal(err)
	}
	if common.HexToHash(hs.Root) != head.Root() {
		t.Fatalf("state dump root %s, head root %s", hs.Root, head.Root())
	}
	slotsSeen := 0
	for addrHex, want := range hs.Accounts {
		addr := common.HexToAddress(addrHex)
		slots := []common.Hash{}
		for s := range want.Storage {
			slots = append(slots, s)
		}
		answer := call(t, node, "eth_getProof", addr, slots, head.Hash())
		acc, err := evmverify.VerifyProof(answer, head.Root(), addr, slots)
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		if acc.Balance.Dec() != want.Balance || want.Nonce.String() != fmtUint(acc.Nonce) || acc.CodeHash != want.CodeHash {
			t.Fatalf("%s: proven %+v, dump %+v", addr, acc, want)
		}
		for s, v := range want.Storage {
			if acc.Storage[s] != common.HexToHash(v) {
				t.Fatalf("%s slot %s: proven %s, dump %s", addr, s, acc.Storage[s], v)
			}
			slotsSeen++
		}
		code, err := evmverify.VerifyCode(call(t, node, "eth_getCode", addr, head.Hash()), acc)
		if err != nil {
			t.Fatalf("%s code: %v", addr, err)
		}
		if acc.CodeHash != types.EmptyCodeHash && len(code) == 0 {
			t.Fatalf("%s: no code", addr)
		}
	}
	if slotsSeen < 30 {
		t.Fatalf("only %d slots", slotsSeen)
	}

	nobody := common.HexToAddress("0xc1cadaffffffffffffffffffffffffffffffffff")
	slot := common.HexToHash("0x0100000000000000000000000000000000000000000000000000000000000000")
	acc, err := evmverify.VerifyProof(call(t, node, "eth_getProof", nobody, []common.Hash{slot}, head.Hash()), head.Root(), nobody, []common.Hash{slot})
	if err != nil || acc.Exists {
		t.Fatalf("absent account: %+v %v", acc, err)
	}
	if got, _ := acc.StorageJSON(slot); string(got) != `"0x0000000000000000000000000000000000000000000000000000000000000000"` {
		t.Fatalf("absent slot %s", got)
	}
	if got := string(acc.BalanceJSON()); got != `"0x0"` {
		t.Fatalf("balance %s", got)
	}
	// Code that is not the account's is caught.
	someone := common.HexToAddress("0x7dcd17433742f4c0ca53122ab541d0ba67fc27df")
	acc, err = evmverify.VerifyProof(call(t, node, "eth_getProof", someone, []common.Hash{}, head.Hash()), head.Root(), someone, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := evmverify.VerifyCode([]byte(`"0x6001"`), acc); !errors.Is(err, verify.ErrMismatch) {
		t.Fatalf("wrong code: %v", err)
	}
	// A member no proof covers is refused.
	bad := edit(t, string(call(t, node, "eth_getProof", someone, []common.Hash{}, head.Hash())), func(m map[string]any) { m["extra"] = "0x1" })
	if _, err := evmverify.VerifyProof(bad, head.Root(), someone, nil); !errors.Is(err, verify.ErrUnverifiable) {
		t.Fatalf("extra member: %v", err)
	}
}

func fmtUint(n uint64) string { return json.Number(strconvU(n)).String() }

// TestVerifyProofSpelling: the answer is read in one pass from its
// bytes, so what encoding/json used to refuse or tolerate is spelled out
// here. A geth answer with its members reordered, spaces added and a
// name escaped verifies; a member twice, data after the answer, a
// quantity with a leading zero, a hash or a node of the wrong length, a
// member no commitment covers (also inside a slot) and a missing
// storageProof do not, each with its kind of error.
func TestVerifyProofSpelling(t *testing.T) {
	fc := loadFixture(t)
	root := fc.head().Root()
	var c proofCase
	for _, pc := range proofCases(t) {
		if len(pc.slots) > 0 {
			c = pc
		}
	}
	if len(c.slots) == 0 {
		t.Fatal("no fixture with a slot")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(c.result), &m); err != nil {
		t.Fatal(err)
	}
	// build writes the members in the order given, each as raw JSON.
	build := func(members ...string) []byte {
		var b strings.Builder
		b.WriteString("{ ")
		for i := 0; i < len(members); i += 2 {
			if i > 0 {
				b.WriteString(" ,\n")
			}
			b.WriteString(members[i] + " : " + members[i+1])
		}
		b.WriteString(" }")
		return []byte(b.String())
	}
	q := func(s string) string { return `"` + s + `"` }
	mem := func(name string) string { return string(m[name]) }
	all := []string{
		q("storageProof"), mem("storageProof"), q("nonce"), mem("nonce"), q("codeHash"), mem("codeHash"),
		q(`\u0062alance`), mem("balance"), q("address"), mem("address"), q("storageHash"), mem("storageHash"),
		q("accountProof"), mem("accountProof"),
	}
	if _, err := evmverify.VerifyProof(build(all...), root, c.address, c.slots); err != nil {
		t.Fatalf("reordered, spaced, escaped: %v", err)
	}
	with := func(name, value string) []byte {
		out := append([]string(nil), all...)
		for i := 0; i < len(out); i += 2 {
			if out[i] == q(name) || (name == "balance" && out[i] == q(`\u0062alance`)) {
				out[i+1] = value
			}
		}
		return build(out...)
	}
	var balance string
	json.Unmarshal(m["balance"], &balance)
	var slotList []map[string]json.RawMessage
	json.Unmarshal(m["storageProof"], &slotList)
	slotExtra, _ := json.Marshal([]map[string]any{{"key": slotList[0]["key"], "value": slotList[0]["value"], "proof": slotList[0]["proof"], "extra": "0x1"}})
	var nodes []string
	json.Unmarshal(m["accountProof"], &nodes)
	oddNode, _ := json.Marshal(append([]string{nodes[0] + "0"}, nodes[1:]...))
	cases := []struct {
		name string
		raw  []byte
		want error
	}{
		{"member twice", build(append(all, q("nonce"), mem("nonce"))...), verify.ErrMalformed},
		{"data after", append(build(all...), []byte(" {}")...), verify.ErrMalformed},
		{"leading zero", with("balance", q("0x0"+balance[2:])), verify.ErrMalformed},
		{"short hash", with("codeHash", mem("codeHash")[:len(mem("codeHash"))-3]+`"`), verify.ErrMalformed},
		{"odd node", with("accountProof", string(oddNode)), verify.ErrMalformed},
		{"null balance", with("balance", "null"), verify.ErrMismatch},
		{"other balance", with("balance", q(balance+"0")), verify.ErrMismatch},
		{"extra member", build(append(all, q("extra"), q("0x1"))...), verify.ErrUnverifiable},
		{"extra slot member", with("storageProof", string(slotExtra)), verify.ErrUnverifiable},
		{"no storageProof", build(all[2:]...), verify.ErrMalformed},
		{"not an object", []byte(`[]`), verify.ErrMalformed},
	}
	for _, tc := range cases {
		if _, err := evmverify.VerifyProof(tc.raw, root, c.address, c.slots); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	for _, s := range []string{"0x-1", "0x+1", "0x", "1", "0x" + strings.Repeat("1", 65), "0xg"} {
		if _, err := evmverify.ParseSlot(s); err == nil {
			t.Errorf("ParseSlot(%q) passed", s)
		}
	}
	if h, err := evmverify.ParseSlot("0xAb1"); err != nil || h != common.HexToHash("0xab1") {
		t.Errorf("ParseSlot(0xAb1) = %s, %v", h, err)
	}
}

// TestExecutorProve: an answer Prove checked at a header is what Proven
// answers later at that header, for the account and the slots proven
// with it and nothing else; a wrong answer is refused and leaves nothing
// behind; another header has nothing proven.
func TestExecutorProve(t *testing.T) {
	fc := loadFixture(t)
	head := evmverify.NewHeader(fc.head().Header())
	var c proofCase
	for _, pc := range proofCases(t) {
		if len(pc.slots) > 0 {
			c = pc
		}
	}
	ex := evmverify.NewExecutor(fc.chain, emptySource{}, evmverify.ExecutorOptions{})
	if _, ok := ex.Proven(head, c.address, nil); ok {
		t.Fatal("proven before anything was")
	}
	bad := edit(t, c.result, func(m map[string]any) { m["balance"] = "0x77" })
	if _, err := ex.Prove(bad, head, c.address, c.slots); !errors.Is(err, verify.ErrMismatch) {
		t.Fatalf("wrong balance: %v", err)
	}
	if _, ok := ex.Proven(head, c.address, nil); ok {
		t.Fatal("a refused answer was kept")
	}
	want, err := ex.Prove([]byte(c.result), head, c.address, c.slots)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := ex.Proven(head, c.address, c.slots)
	if !ok || got.Balance.Cmp(want.Balance) != 0 || got.Nonce != want.Nonce || got.CodeHash != want.CodeHash || got.StorageRoot != want.StorageRoot {
		t.Fatalf("Proven = %+v, %v; want %+v", got, ok, want)
	}
	for _, s := range c.slots {
		if g, _ := got.StorageJSON(s); string(g) != `"0x0000000000000000000000000000000000000000000000000000000000000038"` {
			t.Fatalf("slot %s = %s", s, g)
		}
	}
	got.Balance.SetUint64(1) // the caller's copy
	if again, _ := ex.Proven(head, c.address, nil); again.Balance.Cmp(want.Balance) != 0 {
		t.Fatal("a caller's change reached the kept account")
	}
	if _, ok := ex.Proven(head, c.address, []common.Hash{common.HexToHash("0x7777")}); ok {
		t.Fatal("a slot never proven is proven")
	}
	if _, ok := ex.Proven(head, common.HexToAddress("0x01"), nil); ok {
		t.Fatal("an account never proven is proven")
	}
	parent := evmverify.NewHeader(fc.blocks[len(fc.blocks)-2].Header())
	if _, ok := ex.Proven(parent, c.address, nil); ok {
		t.Fatal("proven at another block")
	}
}
