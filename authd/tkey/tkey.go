// Package tkey is tKey-style MFA over the key network: once MFA is on, the
// user's final key k is the secret of a 2-of-n Shamir split, f(x) = k + a·x
// over the secp256k1 scalar field, and the network's key (the oAuthKey the
// key network rebuilds) is just one share of it, ShareB, at a random
// index. The other shares are a device share (kept on the device), a
// backup share written as a BIP-39 recovery phrase, a password share
// (AES-256-GCM under an Argon2id key from the password) and a social
// backup share (ECIES-encrypted to another account's network key). Any two
// shares rebuild k; one alone, the network's included, says nothing
// about it.
//
// The metadata (polynomial id, share indexes, public polynomial, encrypted
// shares) is stored by the key network, signed by the network key
// (keynet.Client.SetMetadata), as tKey keeps it on its metadata server.
package tkey

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/porticohq/portico/auth/eccrypto"
	"github.com/porticohq/portico/authd/keynet/sss"
	"golang.org/x/crypto/argon2"
)

// Share kinds, as MfaSettings names the factors.
const (
	KindNetwork  = "network"
	KindDevice   = "deviceShareFactor"
	KindBackup   = "backUpShareFactor"
	KindPassword = "passwordFactor"
	KindSocial   = "socialBackupFactor"
)

// Errors of this package.
var (
	// ErrNotEnoughShares: fewer than two distinct valid shares.
	ErrNotEnoughShares = errors.New("tkey: two distinct shares are needed")
	// ErrBadShare: a share is not on the user's polynomial.
	ErrBadShare = errors.New("tkey: share does not match the metadata")
	// ErrNoFactor: the metadata has no share of that kind.
	ErrNoFactor = errors.New("tkey: no share of that kind")
	// ErrWrongPassword: the password share does not decrypt.
	ErrWrongPassword = errors.New("tkey: wrong password")
)

// KDF are Argon2id parameters for the password share.
type KDF struct {
	Time    uint32 `json:"t"`
	Memory  uint32 `json:"m"` // KiB
	Threads uint8  `json:"p"`
}

// DefaultKDF is RFC 9106's second recommended Argon2id setting.
func DefaultKDF() KDF { return KDF{Time: 3, Memory: 64 * 1024, Threads: 4} }

// ShareInfo describes one share in the metadata.
type ShareInfo struct {
	Kind string `json:"kind"`
	// Index is the share's x, hex.
	Index string `json:"index"`
	// Encrypted is the share value, encrypted (password: AES-256-GCM
	// nonce‖ciphertext hex; social: eccrypto JSON); empty for shares kept
	// outside (network, device, backup phrase).
	Encrypted string `json:"encrypted,omitempty"`
	// Salt and KDF are the password share's Argon2id inputs.
	Salt string `json:"salt,omitempty"`
	KDF  *KDF   `json:"kdf,omitempty"`
	// SocialPublicKey is the key the social share is encrypted to.
	SocialPublicKey string `json:"socialPublicKey,omitempty"`
}

// Metadata is what the network keeps for an MFA user.
type Metadata struct {
	// PolyID names the polynomial: keccak256 of its public commitments.
	PolyID string `json:"polyId"`
	// Commitments are k·G and a·G, compressed hex: shares are checked
	// against them, and Commitments[0] is the final public key.
	Commitments []string    `json:"commitments"`
	Shares      []ShareInfo `json:"shares"`
}

// Options choose the factors of Enable.
type Options struct {
	// Password, if set, adds a password share.
	Password string
	KDF      KDF
	// SocialBackup, if set, adds a share encrypted to this key (another
	// account's network public key).
	SocialBackup *secp256k1.PublicKey
}

// Setup is the result of Enable: the final key and what the user keeps.
type Setup struct {
	FinalKey *secp256k1.PrivateKey
	Metadata *Metadata
	// DeviceShare is kept on the device (e.g. the OS keyring).
	DeviceShare sss.Share
	// BackupPhrase is the backup share as 24 BIP-39 words.
	BackupPhrase string
}

// Enable turns MFA on for the holder of networkKey: it makes a fresh final
// key and a 2-of-n split of it in which networkKey is one share.
func Enable(networkKey *secp256k1.PrivateKey, opts Options) (*Setup, error) {
	k, err := sss.RandomScalar()
	if err != nil {
		return nil, err
	}
	defer k.Zero()
	idx := make([]secp256k1.ModNScalar, 5)
	for i := range idx {
		for {
			if idx[i], err = sss.RandomScalar(); err != nil {
				return nil, err
			}
			dup := false
			for j := range i {
				dup = dup || idx[j].Equals(&idx[i])
			}
			if !dup {
				break
			}
		}
	}
	// a = (networkKey − k) / x_B, so that f(x_B) = networkKey.
	var a, inv secp256k1.ModNScalar
	a.NegateVal(&k).Add(&networkKey.Key)
	inv.InverseValNonConst(&idx[0])
	a.Mul(&inv)
	poly := sss.Polynomial{k, a}
	defer poly.Zero()
	comm := poly.Commit()
	md := &Metadata{Commitments: comm.Hex()}
	md.PolyID = hex.EncodeToString(eccrypto.Keccak256([]byte(fmt.Sprint(md.Commitments))))
	share := func(i int) sss.Share { return sss.Share{Index: idx[i], Value: poly.Eval(&idx[i])} }
	info := func(kind string, i int) ShareInfo {
		b := idx[i].Bytes()
		return ShareInfo{Kind: kind, Index: hex.EncodeToString(b[:])}
	}

	st := &Setup{FinalKey: secp256k1.NewPrivateKey(&k), Metadata: md}
	md.Shares = append(md.Shares, info(KindNetwork, 0), info(KindDevice, 1), info(KindBackup, 2))
	st.DeviceShare = share(1)
	backup := share(2)
	b := backup.Value.Bytes()
	if st.BackupPhrase, err = Mnemonic(b[:]); err != nil {
		return nil, err
	}
	clear(b[:])
	if opts.Password != "" {
		kdf := opts.KDF
		if kdf == (KDF{}) {
			kdf = DefaultKDF()
		}
		si := info(KindPassword, 3)
		salt := make([]byte, 16)
		if _, err := rand.Read(salt); err != nil {
			return nil, err
		}
		s := share(3)
		v := s.Value.Bytes()
		enc, err := seal(argon2.IDKey([]byte(opts.Password), salt, kdf.Time, kdf.Memory, kdf.Threads, 32), v[:])
		clear(v[:])
		if err != nil {
			return nil, err
		}
		si.Encrypted, si.Salt, si.KDF = hex.EncodeToString(enc), hex.EncodeToString(salt), &kdf
		md.Shares = append(md.Shares, si)
	}
	if opts.SocialBackup != nil {
		si := info(KindSocial, 4)
		s := share(4)
		v := s.Value.Bytes()
		enc, err := eccrypto.Encrypt(opts.SocialBackup, v[:])
		clear(v[:])
		if err != nil {
			return nil, err
		}
		si.Encrypted, si.SocialPublicKey = enc.String(), hex.EncodeToString(opts.SocialBackup.SerializeCompressed())
		md.Shares = append(md.Shares, si)
	}
	return st, nil
}

func seal(key, plain []byte) ([]byte, error) {
	block, err := aes.NewCipher(key)
	clear(key)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, gcm.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return gcm.Seal(nonce, nonce, plain, nil), nil
}

func open(key, sealed []byte) ([]byte, error) {
	block, err := aes.NewCipher(key)
	clear(key)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	if len(sealed) < gcm.NonceSize() {
		return nil, ErrWrongPassword
	}
	p, err := gcm.Open(nil, sealed[:gcm.NonceSize()], sealed[gcm.NonceSize():], nil)
	if err != nil {
		return nil, ErrWrongPassword
	}
	return p, nil
}

// info returns the share of a kind.
func (m *Metadata) info(kind string) (ShareInfo, sss.Share, error) {
	for _, si := range m.Shares {
		if si.Kind != kind {
			continue
		}
		var s sss.Share
		b, err := hex.DecodeString(si.Index)
		if err != nil || len(b) != 32 || s.Index.SetByteSlice(b) || s.Index.IsZero() {
			return si, s, fmt.Errorf("tkey: metadata: %s index unreadable", kind)
		}
		return si, s, nil
	}
	return ShareInfo{}, sss.Share{}, ErrNoFactor
}

func valueFrom(b []byte, s *sss.Share) error {
	if len(b) != 32 || s.Value.SetByteSlice(b) {
		return ErrBadShare
	}
	return nil
}

// NetworkShare is ShareB: the network key at its index.
func (m *Metadata) NetworkShare(networkKey *secp256k1.PrivateKey) (sss.Share, error) {
	_, s, err := m.info(KindNetwork)
	if err != nil {
		return s, err
	}
	s.Value.Set(&networkKey.Key)
	return s, m.check(s)
}

// BackupShare decodes the recovery phrase.
func (m *Metadata) BackupShare(phrase string) (sss.Share, error) {
	_, s, err := m.info(KindBackup)
	if err != nil {
		return s, err
	}
	b, err := MnemonicEntropy(phrase)
	if err != nil {
		return s, err
	}
	defer clear(b)
	if err := valueFrom(b, &s); err != nil {
		return s, err
	}
	return s, m.check(s)
}

// PasswordShare decrypts the password share.
func (m *Metadata) PasswordShare(password string) (sss.Share, error) {
	si, s, err := m.info(KindPassword)
	if err != nil {
		return s, err
	}
	salt, err1 := hex.DecodeString(si.Salt)
	enc, err2 := hex.DecodeString(si.Encrypted)
	if err1 != nil || err2 != nil || si.KDF == nil {
		return s, errors.New("tkey: metadata: password share unreadable")
	}
	p, err := open(argon2.IDKey([]byte(password), salt, si.KDF.Time, si.KDF.Memory, si.KDF.Threads, 32), enc)
	if err != nil {
		return s, err
	}
	defer clear(p)
	if err := valueFrom(p, &s); err != nil {
		return s, err
	}
	return s, m.check(s)
}

// SocialShare decrypts the social backup share with the other account's
// network key.
func (m *Metadata) SocialShare(socialKey *secp256k1.PrivateKey) (sss.Share, error) {
	si, s, err := m.info(KindSocial)
	if err != nil {
		return s, err
	}
	enc, err := eccrypto.ParseEncrypted(si.Encrypted)
	if err != nil {
		return s, err
	}
	p, err := eccrypto.Decrypt(socialKey, enc)
	if err != nil {
		return s, ErrBadShare
	}
	defer clear(p)
	if err := valueFrom(p, &s); err != nil {
		return s, err
	}
	return s, m.check(s)
}

// DeviceIndex returns the device share's index (a device keeps only the
// value with it; the index is in the metadata).
func (m *Metadata) DeviceIndex() (secp256k1.ModNScalar, error) {
	_, s, err := m.info(KindDevice)
	return s.Index, err
}

// check verifies a share against the public polynomial.
func (m *Metadata) check(s sss.Share) error {
	comm, err := sss.ParseCommitment(m.Commitments)
	if err != nil || len(comm) != 2 {
		return errors.New("tkey: metadata: commitments unreadable")
	}
	if !comm.Verify(s) {
		return ErrBadShare
	}
	return nil
}

// Reconstruct rebuilds the final key from two or more shares, each checked
// against the metadata.
func (m *Metadata) Reconstruct(shares ...sss.Share) (*secp256k1.PrivateKey, error) {
	var good []sss.Share
	for _, s := range shares {
		if m.check(s) != nil {
			return nil, ErrBadShare
		}
		dup := false
		for _, g := range good {
			dup = dup || g.Index.Equals(&s.Index)
		}
		if !dup {
			good = append(good, s)
		}
	}
	if len(good) < 2 {
		return nil, ErrNotEnoughShares
	}
	k, err := sss.Interpolate(good[:2])
	if err != nil {
		return nil, err
	}
	defer k.Zero()
	comm, _ := sss.ParseCommitment(m.Commitments)
	if !sss.PublicKeyOf(&k).IsEqual(comm.PublicKey()) {
		return nil, ErrBadShare
	}
	return secp256k1.NewPrivateKey(&k), nil
}

// Marshal is the metadata as the network stores it.
func (m *Metadata) Marshal() (string, error) {
	b, err := json.Marshal(m)
	return string(b), err
}

// ParseMetadata reads stored metadata.
func ParseMetadata(s string) (*Metadata, error) {
	var m Metadata
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("tkey: metadata: %w", err)
	}
	return &m, nil
}
