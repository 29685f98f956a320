package starknettx

import (
	"errors"
	"math/big"

	starkcurve "github.com/consensys/gnark-crypto/ecc/stark-curve"
	"github.com/consensys/gnark-crypto/ecc/stark-curve/ecdsa"
	"github.com/consensys/gnark-crypto/ecc/stark-curve/fp"
	"github.com/consensys/gnark-crypto/ecc/stark-curve/fr"
)

// Errors of Sign and PublicKey.
var (
	// ErrBadPrivateKey: a private key must be in [1, n), n the curve order.
	ErrBadPrivateKey = errors.New("starknettx: private key is not in [1, curve order)")
	// ErrHashTooLarge: Cairo's ECDSA signs only hashes below 2^251.
	ErrHashTooLarge = errors.New("starknettx: message hash is not below 2^251")
)

// CurveOrder returns n, the order of the Stark curve's generator: private
// keys are in [1, n).
func CurveOrder() *big.Int { return fr.Modulus() }

// PublicKey returns the Stark public key of a private key: the x
// coordinate of priv·G, which is what accounts store and starknet.js's
// getStarkKey returns.
func PublicKey(priv *big.Int) (Felt, error) {
	if priv.Sign() <= 0 || priv.Cmp(fr.Modulus()) >= 0 {
		return Felt{}, ErrBadPrivateKey
	}
	var p starkcurve.G1Affine
	p.ScalarMultiplicationBase(priv)
	return p.X, nil
}

// Sign signs a message hash (a transaction hash) with priv, as an account
// contract checks it: ECDSA on the Stark curve with the hash taken as the
// integer it is, r, s and s⁻¹ all below 2^251. The nonce is gnark-crypto's
// (random, hedged with the key and the hash), so two signatures of one
// hash differ; both verify.
func Sign(priv *big.Int, hash Felt) (r, s Felt, err error) {
	if priv.Sign() <= 0 || priv.Cmp(fr.Modulus()) >= 0 {
		return r, s, ErrBadPrivateKey
	}
	if feltBig(&hash).Cmp(two251) >= 0 {
		return r, s, ErrHashTooLarge
	}
	var pub starkcurve.G1Affine
	pub.ScalarMultiplicationBase(priv)
	pubBytes := pub.Bytes()
	buf := append(pubBytes[:], priv.FillBytes(make([]byte, 32))...)
	var key ecdsa.PrivateKey
	if _, err := key.SetBytes(buf); err != nil {
		return r, s, err
	}
	clear(buf)
	msg := hash.Bytes()
	// A signature with r, s or s⁻¹ at or above 2^251 is one Cairo refuses;
	// they come once in about 2^55 tries, so a few retries are plenty.
	for range 16 {
		sig, err := key.Sign(msg[:], nil)
		if err != nil {
			return r, s, err
		}
		rb, sb := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
		if inCairoRange(rb) && inCairoRange(sb) && inCairoRange(new(big.Int).ModInverse(sb, fr.Modulus())) {
			r.SetBigInt(rb)
			s.SetBigInt(sb)
			return r, s, nil
		}
	}
	return r, s, errors.New("starknettx: no signature in Cairo's range after 16 tries")
}

// inCairoRange reports whether v is in [1, 2^251).
func inCairoRange(v *big.Int) bool { return v.Sign() > 0 && v.Cmp(two251) < 0 }

// Verify reports whether (r, s) is a signature of hash by the key whose
// public key (x coordinate) is pub, with Cairo's rules: hash below 2^251,
// r, s and s⁻¹ in [1, 2^251). A public key stands for the two points with
// that x; a signature by either verifies, as in Cairo's check.
func Verify(pub, hash, r, s Felt) bool {
	rb, sb := feltBig(&r), feltBig(&s)
	if feltBig(&hash).Cmp(two251) >= 0 || !inCairoRange(rb) || !inCairoRange(sb) {
		return false
	}
	if w := new(big.Int).ModInverse(sb, fr.Modulus()); w == nil || !inCairoRange(w) {
		return false
	}
	p, ok := pointOfX(pub)
	if !ok {
		return false
	}
	sig := make([]byte, 64)
	rb.FillBytes(sig[:32])
	sb.FillBytes(sig[32:])
	msg := hash.Bytes()
	var neg starkcurve.G1Affine
	neg.Neg(&p)
	for _, q := range []starkcurve.G1Affine{p, neg} {
		key := ecdsa.PublicKey{A: q}
		if ok, err := key.Verify(sig, msg[:], nil); err == nil && ok {
			return true
		}
	}
	return false
}

// pointOfX returns a curve point with x coordinate x, if there is one.
func pointOfX(x Felt) (starkcurve.G1Affine, bool) {
	a, b := starkcurve.CurveCoefficients()
	var y2, t fp.Element
	y2.Square(&x).Mul(&y2, &x)
	t.Mul(&a, &x)
	y2.Add(&y2, &t).Add(&y2, &b)
	var y fp.Element
	if y.Sqrt(&y2) == nil {
		return starkcurve.G1Affine{}, false
	}
	p := starkcurve.G1Affine{X: x, Y: y}
	return p, p.IsOnCurve()
}
