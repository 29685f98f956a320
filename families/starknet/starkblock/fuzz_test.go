package starkblock_test

import (
	"errors"
	"os"
	"testing"

	"github.com/porticohq/portico/families/starknet/starkblock"
)

// FuzzDecode: any bytes either decode into a header whose hash can be
// computed (or is refused with ErrVersion), or give a *FieldError; never
// a panic.
func FuzzDecode(f *testing.F) {
	raw, err := os.ReadFile("testdata/pathfinder_newheads_0.14.3.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"block_hash":"0x1","starknet_version":"0.13.2.1"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, _, err := starkblock.Decode(b)
		if err != nil {
			var fe *starkblock.FieldError
			if !errors.As(err, &fe) || fe.Field == "" {
				t.Fatalf("error without a field: %v", err)
			}
			return
		}
		if _, err := h.Hash(); err != nil && !errors.Is(err, starkblock.ErrVersion) {
			t.Fatalf("hash: %v", err)
		}
	})
}
