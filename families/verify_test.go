package families_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/families"
)

// checkVerify runs config's own checks and then each network's family's
// verify check, as portico's config check does.
func checkVerify(yml string) error {
	cfg, err := config.Parse([]byte(yml), func(string) (string, bool) { return "", false })
	if err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	for i := range cfg.Networks {
		n := &cfg.Networks[i]
		f, err := families.Get(n.Family)
		if err != nil {
			return err
		}
		if err := f.CheckVerify(fmt.Sprintf("config: networks[%d]", i), n); err != nil {
			return err
		}
	}
	return nil
}

// TestCheckVerify: what each family's verifier takes of a network's
// verify lines (moved from config's TestErrors with the checks).
func TestCheckVerify(t *testing.T) {
	cases := []struct {
		name, yml, want string
	}{
		{"verify slot chain", "networks: [{name: a, family: solana, verify: on}]", "config: networks[0].verify: the slot chain's answers cannot be verified"},
		{"verify rollup checkpoint", "networks: [{name: a, family: starknet, verify: strict, verify_checkpoint: '0xzz'}]", "config: networks[0].verify_checkpoint: want a block hash, 0x and 1 to 64 hex digits"},
		{"verify chain id", "networks: [{name: a, family: evm, verify: on, chain_id: mainnet, upstreams: [{url: 'http://x'}]}]", `config: networks[0].chain_id: verify needs an EVM chain id, a number such as "0x1" or "1", got "mainnet"`},
		{"verify checkpoint", "networks: [{name: a, family: evm, verify: on, verify_checkpoint: '0x12'}]", "config: networks[0].verify_checkpoint: want a block hash"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := checkVerify(tc.yml)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	for _, yml := range []string{
		"networks: [{name: a, family: evm, verify: on, chain_id: '0x1', upstreams: [{url: 'http://a'}]}]",
		"networks: [{name: a, family: evm, verify: strict, verify_checkpoint: '0x" + strings.Repeat("ab", 32) + "'}]",
		"networks: [{name: a, family: starknet, verify: on, verify_checkpoint: '0x1ab'}]",
		"networks: [{name: a, family: solana, verify: off}]",
	} {
		if err := checkVerify(yml); err != nil {
			t.Errorf("%s: %v", yml, err)
		}
	}
}
