package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/zalando/go-keyring"
)

// ErrNotStored: the storage holds nothing under the key.
var ErrNotStored = errors.New("auth: nothing stored under that key")

// Storage keeps the SDK's secrets on the device: the session id and the
// dapp shares. Keys are short ASCII names.
type Storage interface {
	// Get returns the value under key, or ErrNotStored.
	Get(key string) (string, error)
	// Set stores value under key, replacing any old value.
	Set(key, value string) error
	// Delete removes key; deleting a missing key is not an error.
	Delete(key string) error
}

// The storage keys the SDK uses (the session id key is the Swift SDK's).
const (
	storageSessionID  = "sessionID"
	storageDappShares = "dappShares"
)

var (
	_ Storage = (*FileStorage)(nil)
	_ Storage = (*KeyringStorage)(nil)
)

var storageKeyRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// FileStorage keeps each key in a file of its own under Dir, readable by
// the owner only (0600, in a 0700 directory). It is the fallback where no
// OS keyring is available (headless machines) and what tests use.
type FileStorage struct {
	// Dir is the directory; it is created on the first Set.
	Dir string
}

func (f *FileStorage) path(key string) (string, error) {
	if !storageKeyRE.MatchString(key) || key == "." || key == ".." {
		return "", &FieldError{Field: "key", Value: key, Reason: "is not a storage key"}
	}
	return filepath.Join(f.Dir, key), nil
}

// Get reads the key's file.
func (f *FileStorage) Get(key string) (string, error) {
	p, err := f.path(key)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return "", ErrNotStored
	}
	if err != nil {
		return "", fmt.Errorf("auth: storage: %w", err)
	}
	return string(b), nil
}

// Set writes the key's file atomically (a temporary file, then a rename).
func (f *FileStorage) Set(key, value string) error {
	p, err := f.path(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(f.Dir, 0o700); err != nil {
		return fmt.Errorf("auth: storage: %w", err)
	}
	tmp, err := os.CreateTemp(f.Dir, "."+key+".*")
	if err != nil {
		return fmt.Errorf("auth: storage: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("auth: storage: %w", err)
	}
	if _, err := tmp.WriteString(value); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("auth: storage: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("auth: storage: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("auth: storage: %w", err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return fmt.Errorf("auth: storage: %w", err)
	}
	return nil
}

// Delete removes the key's file.
func (f *FileStorage) Delete(key string) error {
	p, err := f.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("auth: storage: %w", err)
	}
	return nil
}

// KeyringStorage keeps the keys in the OS keyring (macOS Keychain, the
// Secret Service on Linux, the Windows Credential Manager) under Service.
type KeyringStorage struct {
	// Service names the keyring entries' owner; DefaultStorage uses
	// "portico-auth:" + the client id.
	Service string
}

// Get reads the keyring entry.
func (k *KeyringStorage) Get(key string) (string, error) {
	v, err := keyring.Get(k.Service, key)
	if errors.Is(err, keyring.ErrNotFound) {
		return "", ErrNotStored
	}
	if err != nil {
		return "", fmt.Errorf("auth: keyring: %w", err)
	}
	return v, nil
}

// Set writes the keyring entry.
func (k *KeyringStorage) Set(key, value string) error {
	if err := keyring.Set(k.Service, key, value); err != nil {
		return fmt.Errorf("auth: keyring: %w", err)
	}
	return nil
}

// Delete removes the keyring entry.
func (k *KeyringStorage) Delete(key string) error {
	if err := keyring.Delete(k.Service, key); err != nil && !errors.Is(err, keyring.ErrNotFound) {
		return fmt.Errorf("auth: keyring: %w", err)
	}
	return nil
}

// DefaultStorage returns the OS keyring for clientID if one answers, and
// otherwise a FileStorage under the user's config directory
// (portico/auth/<hash of the client id>).
func DefaultStorage(clientID string) (Storage, error) {
	kr := &KeyringStorage{Service: "portico-auth:" + clientID}
	if _, err := keyring.Get(kr.Service, storageSessionID); err == nil || errors.Is(err, keyring.ErrNotFound) {
		return kr, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return nil, fmt.Errorf("auth: no keyring and no config directory: %w", err)
	}
	sum := sha256.Sum256([]byte(clientID))
	return &FileStorage{Dir: filepath.Join(dir, "portico", "auth", hex.EncodeToString(sum[:8]))}, nil
}
