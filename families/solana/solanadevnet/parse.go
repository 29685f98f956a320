package solanadevnet

import (
	"encoding/binary"
	"strings"

	"github.com/gagliardetto/solana-go"
	"github.com/mr-tron/base58"
)

// parsedIx renders an instruction for jsonParsed: parsed when the devnet
// knows the program and the instruction (as agave's parsers do), else
// partially decoded.
func parsedIx(keys []solana.PublicKey, prog uint16, accts []uint16, data []byte, height int) any {
	pid := keys[prog]
	names := make([]string, len(accts))
	for i, a := range accts {
		if int(a) < len(keys) {
			names[i] = keys[a].String()
		}
	}
	var program string
	var parsed any
	switch pid {
	case systemProgram:
		program, parsed = "system", parseSystem(names, data)
	case voteProgram:
		program, parsed = "vote", parseVote(names, data)
	case lookupTableProgram:
		program, parsed = "address-lookup-table", parseLookupTable(names, data)
	case memoProgram:
		// Agave shows the memo as a string, invalid UTF-8 replaced.
		program, parsed = "spl-memo", strings.ToValidUTF8(string(data), "\uFFFD")
	}
	if parsed == nil {
		return uiPartialIx{Accounts: names, Data: base58.Encode(data), ProgramID: pid.String(), StackHeight: height}
	}
	return uiParsedIx{Parsed: parsed, Program: program, ProgramID: pid.String(), StackHeight: height}
}

type parsedInfo struct {
	Info any    `json:"info"`
	Type string `json:"type"`
}

// parseSystem parses the system instructions the devnet runs.
func parseSystem(accts []string, data []byte) any {
	if len(data) < 4 {
		return nil
	}
	d := data[4:]
	switch binary.LittleEndian.Uint32(data) {
	case 0:
		if len(d) != 48 || len(accts) < 2 {
			return nil
		}
		return parsedInfo{Type: "createAccount", Info: map[string]any{
			"source": accts[0], "newAccount": accts[1],
			"lamports": binary.LittleEndian.Uint64(d), "space": binary.LittleEndian.Uint64(d[8:]),
			"owner": solana.PublicKeyFromBytes(d[16:48]).String(),
		}}
	case 1:
		if len(d) != 32 || len(accts) < 1 {
			return nil
		}
		return parsedInfo{Type: "assign", Info: map[string]any{"account": accts[0], "owner": solana.PublicKeyFromBytes(d).String()}}
	case 2:
		if len(d) != 8 || len(accts) < 2 {
			return nil
		}
		return parsedInfo{Type: "transfer", Info: map[string]any{"source": accts[0], "destination": accts[1], "lamports": binary.LittleEndian.Uint64(d)}}
	case 8:
		if len(d) != 8 || len(accts) < 1 {
			return nil
		}
		return parsedInfo{Type: "allocate", Info: map[string]any{"account": accts[0], "space": binary.LittleEndian.Uint64(d)}}
	}
	return nil
}

// parseVote parses a Vote instruction.
func parseVote(accts []string, data []byte) any {
	v, ok := decodeVoteIx(data)
	if !ok || len(accts) < 4 {
		return nil
	}
	slots := v.slots
	if slots == nil {
		slots = []uint64{}
	}
	vote := map[string]any{"slots": slots, "hash": v.hash.String(), "timestamp": v.timestamp}
	return parsedInfo{Type: "vote", Info: map[string]any{
		"voteAccount": accts[0], "slotHashesSysvar": accts[1], "clockSysvar": accts[2],
		"voteAuthority": accts[3], "vote": vote,
	}}
}

// parseLookupTable parses createLookupTable and extendLookupTable.
func parseLookupTable(accts []string, data []byte) any {
	if len(data) < 4 {
		return nil
	}
	d := data[4:]
	switch binary.LittleEndian.Uint32(data) {
	case 0:
		if len(d) != 9 || len(accts) < 4 {
			return nil
		}
		return parsedInfo{Type: "createLookupTable", Info: map[string]any{
			"lookupTableAccount": accts[0], "lookupTableAuthority": accts[1], "payerAccount": accts[2],
			"systemProgram": accts[3], "recentSlot": binary.LittleEndian.Uint64(d), "bumpSeed": d[8],
		}}
	case 2:
		if len(d) < 8 || len(accts) < 2 {
			return nil
		}
		n := binary.LittleEndian.Uint64(d)
		if uint64(len(d)-8) != 32*n {
			return nil
		}
		addrs := make([]string, 0, n)
		for o := 8; o < len(d); o += 32 {
			addrs = append(addrs, solana.PublicKeyFromBytes(d[o:o+32]).String())
		}
		info := map[string]any{"lookupTableAccount": accts[0], "lookupTableAuthority": accts[1], "newAddresses": addrs}
		if len(accts) >= 4 {
			info["payerAccount"], info["systemProgram"] = accts[2], accts[3]
		}
		return parsedInfo{Type: "extendLookupTable", Info: info}
	}
	return nil
}
