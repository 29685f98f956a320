package keynet

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/porticohq/portico/auth/eccrypto"
)

// NodeKeyFile is the name of a node's signing key file in its data
// directory.
const NodeKeyFile = "node.key"

// ErrKeyFileMode: a node key file can be read or written by users other
// than its owner.
var ErrKeyFileMode = errors.New("keynet: node key file is accessible by other users (chmod 600 it)")

// ReadNodeKey reads a node's signing key: a file holding the private key
// as 64 hex characters. On Unix the file must be private to its owner
// (no group or other permissions), as ssh requires of its keys. Errors
// never quote the file's content.
func ReadNodeKey(path string) (*secp256k1.PrivateKey, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("keynet: node key: %w", err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %04o", ErrKeyFileMode, path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("keynet: node key: %w", err)
	}
	s := strings.TrimSpace(string(b))
	clear(b)
	key, err := eccrypto.ParsePrivateKeyHex(s)
	if err != nil {
		return nil, fmt.Errorf("keynet: node key %s: not a secp256k1 private key in hex", path)
	}
	return key, nil
}

// WriteNodeKey writes key to a new file at path, private to its owner
// (mode 0600), creating the directory if needed. It never overwrites: an
// existing file is an error wrapping fs.ErrExist.
func WriteNodeKey(path string, key *secp256k1.PrivateKey) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("keynet: node key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("keynet: node key: %w", err)
	}
	b := []byte(eccrypto.PrivateKeyHex(key) + "\n")
	_, err = f.Write(b)
	clear(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("keynet: node key: %w", err)
	}
	return nil
}

// LoadOrCreateNodeKey reads the node key at path, or makes a fresh one
// and writes it there if the file does not exist; created reports which.
func LoadOrCreateNodeKey(path string) (key *secp256k1.PrivateKey, created bool, err error) {
	key, err = ReadNodeKey(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, false, err
	}
	if key, err = eccrypto.GenerateKey(); err != nil {
		return nil, false, err
	}
	if err := WriteNodeKey(path, key); err != nil {
		if errors.Is(err, fs.ErrExist) { // another process made it first
			key, err = ReadNodeKey(path)
			return key, false, err
		}
		return nil, false, err
	}
	return key, true, nil
}

// NodePublicKeyHex is how a node's public key is written in a network
// file (uncompressed hex, as Peer.PublicKey).
func NodePublicKeyHex(key *secp256k1.PrivateKey) string { return eccrypto.PublicKeyHex(key.PubKey()) }
