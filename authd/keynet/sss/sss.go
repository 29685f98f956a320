// Package sss is Shamir secret sharing with Feldman commitments over the
// secp256k1 scalar field: the share arithmetic of the key network's
// distributed key generation, of client-side reconstruction and of tKey.
//
// Scalars are secp256k1.ModNScalar (constant-time arithmetic mod n);
// commitments are curve points.
package sss

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// Errors of this package.
var (
	// ErrDuplicateIndex: two shares have the same index.
	ErrDuplicateIndex = errors.New("sss: duplicate share index")
	// ErrZeroIndex: a share has index 0, which is where the secret is.
	ErrZeroIndex = errors.New("sss: share index 0")
	// ErrNoShares: nothing to interpolate.
	ErrNoShares = errors.New("sss: no shares")
)

// Share is one point (Index, Value) of a secret polynomial.
type Share struct {
	Index secp256k1.ModNScalar
	Value secp256k1.ModNScalar
}

// IndexShare makes the share at a small integer index (node indexes).
func IndexShare(index uint32, value *secp256k1.ModNScalar) Share {
	var s Share
	s.Index.SetInt(index)
	s.Value.Set(value)
	return s
}

// RandomScalar returns a uniformly random non-zero scalar from crypto/rand.
func RandomScalar() (secp256k1.ModNScalar, error) {
	var b [32]byte
	var s secp256k1.ModNScalar
	for {
		if _, err := rand.Read(b[:]); err != nil {
			return s, fmt.Errorf("sss: random: %w", err)
		}
		// Rejection sampling: only values below n, never zero.
		if overflow := s.SetBytes(&b); overflow == 0 && !s.IsZero() {
			clear(b[:])
			return s, nil
		}
	}
}

// Polynomial is a polynomial over Z_n; Polynomial[0] is the secret.
type Polynomial []secp256k1.ModNScalar

// NewPolynomial returns a random polynomial of the given degree whose
// constant term is secret (a random secret if secret is nil).
func NewPolynomial(secret *secp256k1.ModNScalar, degree int) (Polynomial, error) {
	if degree < 0 {
		return nil, fmt.Errorf("sss: degree %d", degree)
	}
	p := make(Polynomial, degree+1)
	for i := range p {
		c, err := RandomScalar()
		if err != nil {
			return nil, err
		}
		p[i] = c
	}
	if secret != nil {
		p[0].Set(secret)
	}
	return p, nil
}

// Eval returns p(x) (Horner).
func (p Polynomial) Eval(x *secp256k1.ModNScalar) secp256k1.ModNScalar {
	var acc secp256k1.ModNScalar
	for i := len(p) - 1; i >= 0; i-- {
		acc.Mul(x).Add(&p[i])
	}
	return acc
}

// Share returns the share of p at index.
func (p Polynomial) Share(index uint32) Share {
	var s Share
	s.Index.SetInt(index)
	s.Value = p.Eval(&s.Index)
	return s
}

// Commit returns the Feldman commitments a_i·G of p's coefficients.
func (p Polynomial) Commit() Commitment {
	c := make(Commitment, len(p))
	for i := range p {
		secp256k1.ScalarBaseMultNonConst(&p[i], &c[i])
		c[i].ToAffine()
	}
	return c
}

// Zero overwrites the coefficients.
func (p Polynomial) Zero() {
	for i := range p {
		p[i].Zero()
	}
}

// Commitment is a public polynomial: points A_i = a_i·G. A_0 is the public
// key of the secret.
type Commitment []secp256k1.JacobianPoint

// Eval returns Σ A_i·x^i, the public key of the share at x.
func (c Commitment) Eval(x *secp256k1.ModNScalar) secp256k1.JacobianPoint {
	var acc secp256k1.JacobianPoint
	for i := len(c) - 1; i >= 0; i-- {
		var t secp256k1.JacobianPoint
		secp256k1.ScalarMultNonConst(x, &acc, &t)
		secp256k1.AddNonConst(&t, &c[i], &acc)
	}
	acc.ToAffine()
	return acc
}

// Verify reports whether share lies on the committed polynomial:
// Value·G == Σ A_i·Index^i.
func (c Commitment) Verify(s Share) bool {
	if len(c) == 0 {
		return false
	}
	want := c.Eval(&s.Index)
	var got secp256k1.JacobianPoint
	secp256k1.ScalarBaseMultNonConst(&s.Value, &got)
	got.ToAffine()
	return got.X.Equals(&want.X) && got.Y.Equals(&want.Y) && got.Z.Equals(&want.Z)
}

// Add returns the coefficient-wise sum of commitments of equal length (the
// commitment of the sum of the polynomials).
func (c Commitment) Add(o Commitment) (Commitment, error) {
	if len(c) != len(o) {
		return nil, fmt.Errorf("sss: adding commitments of %d and %d terms", len(c), len(o))
	}
	out := make(Commitment, len(c))
	for i := range c {
		secp256k1.AddNonConst(&c[i], &o[i], &out[i])
		out[i].ToAffine()
	}
	return out, nil
}

// PublicKey returns A_0 as a public key.
func (c Commitment) PublicKey() *secp256k1.PublicKey {
	if len(c) == 0 {
		return nil
	}
	p := c[0]
	p.ToAffine()
	return secp256k1.NewPublicKey(&p.X, &p.Y)
}

// Hex returns the points compressed, in hex.
func (c Commitment) Hex() []string {
	out := make([]string, len(c))
	for i := range c {
		p := c[i]
		p.ToAffine()
		out[i] = hex.EncodeToString(secp256k1.NewPublicKey(&p.X, &p.Y).SerializeCompressed())
	}
	return out
}

// ParseCommitment reads points written by Hex (or uncompressed).
func ParseCommitment(hs []string) (Commitment, error) {
	if len(hs) == 0 {
		return nil, errors.New("sss: empty commitment")
	}
	out := make(Commitment, len(hs))
	for i, h := range hs {
		b, err := hex.DecodeString(h)
		if err != nil {
			return nil, fmt.Errorf("sss: commitment %d: not hex", i)
		}
		pub, err := secp256k1.ParsePubKey(b)
		if err != nil {
			return nil, fmt.Errorf("sss: commitment %d: %w", i, err)
		}
		pub.AsJacobian(&out[i])
	}
	return out, nil
}

// Interpolate returns the secret p(0) of the polynomial through shares
// (Lagrange interpolation). With fewer shares than the degree + 1 the
// result is unrelated to the secret; callers check it against a public key.
func Interpolate(shares []Share) (secp256k1.ModNScalar, error) {
	var secret secp256k1.ModNScalar
	if len(shares) == 0 {
		return secret, ErrNoShares
	}
	for i := range shares {
		if shares[i].Index.IsZero() {
			return secret, ErrZeroIndex
		}
		for j := i + 1; j < len(shares); j++ {
			if shares[i].Index.Equals(&shares[j].Index) {
				return secret, ErrDuplicateIndex
			}
		}
	}
	for i := range shares {
		// λ_i = Π_{j≠i} x_j / (x_j − x_i)
		var num, den secp256k1.ModNScalar
		num.SetInt(1)
		den.SetInt(1)
		for j := range shares {
			if i == j {
				continue
			}
			num.Mul(&shares[j].Index)
			var d secp256k1.ModNScalar
			d.NegateVal(&shares[i].Index).Add(&shares[j].Index)
			den.Mul(&d)
		}
		den.InverseNonConst()
		num.Mul(&den).Mul(&shares[i].Value)
		secret.Add(&num)
	}
	return secret, nil
}

// PublicKeyOf returns s·G.
func PublicKeyOf(s *secp256k1.ModNScalar) *secp256k1.PublicKey {
	return secp256k1.NewPrivateKey(s).PubKey()
}
