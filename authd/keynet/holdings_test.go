package keynet_test

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/porticohq/portico/authd/keynet"
	"github.com/porticohq/portico/internal/testsvc"
	_ "modernc.org/sqlite"
)

// dump returns every value of every row of every table of a SQLite file.
func dump(t *testing.T, path string) string {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		_ = rows.Scan(&n)
		tables = append(tables, n)
	}
	rows.Close()
	var b strings.Builder
	for _, tb := range tables {
		r, err := db.Query(`SELECT * FROM ` + tb)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := r.Columns()
		for r.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			_ = r.Scan(ptrs...)
			for _, v := range vals {
				if x, ok := v.([]byte); ok {
					b.WriteString(string(x) + "|" + hex.EncodeToString(x))
				} else {
					b.WriteString(strings.ToLower(fmt.Sprint(v)))
				}
				b.WriteString("\n")
			}
		}
		r.Close()
	}
	return b.String()
}

func TestNoNodeHoldsTheKey(t *testing.T) {
	is := newIssuer(t)
	dir := t.TempDir()
	e := start(t, is, keynet.EmbeddedOptions{Networks: []string{"mainnet"}, Dir: dir})
	ctx := context.Background()
	k, err := client(t, e, "mainnet").GetKey(ctx, "portico-jwt", "frank", is.token("frank"))
	if err != nil {
		t.Fatal(err)
	}
	key := k.PrivateKeyHex()
	for i := 1; i <= 5; i++ {
		sk, err := e.Store("mainnet", i).Key(ctx, "mainnet", i, "portico-jwt", "frank")
		if err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
		if hex.EncodeToString(sk.Share[:]) == key {
			t.Fatalf("node %d stores the key as its share", i)
		}
		data := dump(t, filepath.Join(dir, fmt.Sprintf("mainnet-node%d.db", i)))
		if !strings.Contains(data, hex.EncodeToString(sk.Share[:])) {
			t.Fatalf("node %d: the dump does not show its own share; the check below would prove nothing", i)
		}
		if strings.Contains(data, key) || strings.Contains(data, string(k.PrivateKey.Serialize())) {
			t.Fatalf("node %d's database contains the key", i)
		}
	}
}

func TestPostgresNetwork(t *testing.T) {
	is := newIssuer(t)
	// All five nodes in one PostgreSQL schema, as many instances would
	// share a server; rows carry the node index.
	e := start(t, is, keynet.EmbeddedOptions{Networks: []string{"sapphire_mainnet"}, PostgresDSN: testsvc.Postgres(t)})
	ctx := context.Background()
	c := client(t, e, "sapphire_mainnet")
	a, err := c.GetKey(ctx, "portico-jwt", "grace", is.token("grace"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.GetKey(ctx, "portico-jwt", "grace", is.token("grace"))
	if err != nil || a.PrivateKeyHex() != b.PrivateKeyHex() {
		t.Fatalf("second login on PostgreSQL: %v", err)
	}
}
