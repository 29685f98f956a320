package sss_test

import (
	"errors"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/porticohq/portico/authd/keynet/sss"
)

func subsets(n, k int) [][]int {
	var out [][]int
	var rec func(start int, cur []int)
	rec = func(start int, cur []int) {
		if len(cur) == k {
			out = append(out, append([]int(nil), cur...))
			return
		}
		for i := start; i < n; i++ {
			rec(i+1, append(cur, i))
		}
	}
	rec(0, nil)
	return out
}

func TestThreshold(t *testing.T) {
	secret, _ := sss.RandomScalar()
	p, err := sss.NewPolynomial(&secret, 2) // 3 of 5
	if err != nil {
		t.Fatal(err)
	}
	c := p.Commit()
	shares := make([]sss.Share, 5)
	for i := range shares {
		shares[i] = p.Share(uint32(i + 1))
		if !c.Verify(shares[i]) {
			t.Fatalf("share %d does not verify", i+1)
		}
	}
	if !c.PublicKey().IsEqual(sss.PublicKeyOf(&secret)) {
		t.Fatal("A_0 is not the public key of the secret")
	}
	for _, sub := range subsets(5, 3) {
		got, err := sss.Interpolate([]sss.Share{shares[sub[0]], shares[sub[1]], shares[sub[2]]})
		if err != nil || !got.Equals(&secret) {
			t.Fatalf("subset %v: %v", sub, err)
		}
	}
	for _, sub := range subsets(5, 2) {
		got, _ := sss.Interpolate([]sss.Share{shares[sub[0]], shares[sub[1]]})
		if got.Equals(&secret) {
			t.Fatalf("two shares %v gave the secret", sub)
		}
	}
	bad := shares[0]
	var one secp256k1.ModNScalar
	one.SetInt(1)
	bad.Value.Add(&one)
	if c.Verify(bad) {
		t.Fatal("a corrupted share verifies")
	}
	if _, err := sss.Interpolate([]sss.Share{shares[0], shares[0]}); !errors.Is(err, sss.ErrDuplicateIndex) {
		t.Fatalf("duplicate: %v", err)
	}
	if _, err := sss.Interpolate(nil); !errors.Is(err, sss.ErrNoShares) {
		t.Fatalf("none: %v", err)
	}
	parsed, err := sss.ParseCommitment(c.Hex())
	if err != nil || !parsed.Verify(shares[3]) {
		t.Fatalf("commitment round trip: %v", err)
	}
}

func TestSumOfPolynomials(t *testing.T) {
	// Joint-Feldman in miniature: the sum of dealt shares is a share of the
	// sum of secrets, checked by the sum of commitments.
	var total secp256k1.ModNScalar
	var sum sss.Commitment
	shares := make([]secp256k1.ModNScalar, 5)
	for range 5 {
		p, _ := sss.NewPolynomial(nil, 2)
		total.Add(&p[0])
		c := p.Commit()
		if sum == nil {
			sum = c
		} else {
			sum, _ = sum.Add(c)
		}
		for j := range shares {
			s := p.Share(uint32(j + 1))
			shares[j].Add(&s.Value)
		}
	}
	var set []sss.Share
	for j := range shares {
		s := sss.IndexShare(uint32(j+1), &shares[j])
		if !sum.Verify(s) {
			t.Fatalf("summed share %d does not verify", j+1)
		}
		set = append(set, s)
	}
	got, _ := sss.Interpolate(set[2:])
	if !got.Equals(&total) || !sum.PublicKey().IsEqual(sss.PublicKeyOf(&total)) {
		t.Fatal("sum of shares does not interpolate to the sum of secrets")
	}
}
