package tkey

import (
	"crypto/sha256"
	_ "embed"
	"errors"
	"fmt"
	"strings"
)

// englishWords is the standard BIP-39 English word list (2048 words, one a
// line; SHA-256 2f5eed53…24dbda, checked by a test).
//
//go:embed english.txt
var englishWords string

// ErrPhrase: a recovery phrase is not a valid BIP-39 phrase.
var ErrPhrase = errors.New("tkey: not a valid recovery phrase")

func wordList() []string { return strings.Fields(englishWords) }

// Mnemonic encodes entropy (16 to 32 bytes, a multiple of 4) as BIP-39
// words: entropy ‖ first len/32 bits of SHA-256(entropy), 11 bits a word.
func Mnemonic(entropy []byte) (string, error) {
	if len(entropy) < 16 || len(entropy) > 32 || len(entropy)%4 != 0 {
		return "", fmt.Errorf("tkey: mnemonic entropy of %d bytes", len(entropy))
	}
	words := wordList()
	sum := sha256.Sum256(entropy)
	bits := append(append([]byte(nil), entropy...), sum[0])
	n := (len(entropy)*8 + len(entropy)/4) / 11
	out := make([]string, n)
	for i := range n {
		idx := 0
		for b := range 11 {
			pos := i*11 + b
			idx = idx<<1 | int(bits[pos/8]>>(7-pos%8)&1)
		}
		out[i] = words[idx]
	}
	clear(bits)
	return strings.Join(out, " "), nil
}

// MnemonicEntropy decodes BIP-39 words back to entropy, checking the
// checksum. Words are matched case-insensitively; spacing is free.
func MnemonicEntropy(phrase string) ([]byte, error) {
	ws := strings.Fields(strings.ToLower(phrase))
	if len(ws) < 12 || len(ws) > 24 || len(ws)%3 != 0 {
		return nil, fmt.Errorf("%w: %d words", ErrPhrase, len(ws))
	}
	index := make(map[string]int, 2048)
	for i, w := range wordList() {
		index[w] = i
	}
	total := len(ws) * 11
	csBits := total / 33
	entBytes := (total - csBits) / 8
	bits := make([]byte, (total+7)/8)
	for i, w := range ws {
		v, ok := index[w]
		if !ok {
			return nil, fmt.Errorf("%w: word %d is not in the list", ErrPhrase, i+1)
		}
		for b := range 11 {
			if v>>(10-b)&1 == 1 {
				pos := i*11 + b
				bits[pos/8] |= 1 << (7 - pos%8)
			}
		}
	}
	ent := bits[:entBytes]
	sum := sha256.Sum256(ent)
	if got, want := bits[entBytes]>>(8-csBits), sum[0]>>(8-csBits); got != want {
		return nil, fmt.Errorf("%w: checksum", ErrPhrase)
	}
	return append([]byte(nil), ent...), nil
}
