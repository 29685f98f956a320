package keynet

import (
	"encoding/hex"
	"fmt"
)

func encodeShare(b *[32]byte) string { return hex.EncodeToString(b[:]) }

func decodeShare(s string, out *[32]byte) error {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 32 {
		return fmt.Errorf("want 64 hex characters")
	}
	copy(out[:], b)
	return nil
}
