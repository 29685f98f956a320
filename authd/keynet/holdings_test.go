package keynet_test

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/porticohq/portico/auth/eccrypto"
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
	dir, keyDir := t.TempDir(), t.TempDir()
	e := start(t, is, keynet.EmbeddedOptions{Networks: []string{"mainnet"}, Dir: dir, KeyDir: keyDir})
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
		path := filepath.Join(dir, fmt.Sprintf("mainnet-node%d.db", i))
		data := dump(t, path)
		if !strings.Contains(data, "frank") {
			t.Fatalf("node %d: the dump does not show the user's row; the checks below would prove nothing", i)
		}
		// Issue 19 (6): the shares were plaintext, so any three of the five
		// databases in one directory rebuilt any user's key.
		if strings.Contains(data, hex.EncodeToString(sk.Share[:])) || strings.Contains(data, string(sk.Share[:])) {
			t.Fatalf("node %d stores its share in plaintext", i)
		}
		if strings.Contains(data, key) || strings.Contains(data, string(k.PrivateKey.Serialize())) {
			t.Fatalf("node %d's database contains the key", i)
		}
		for _, f := range []string{path, path + "-wal", path + "-shm", filepath.Join(keyDir, fmt.Sprintf("mainnet-node%d.key", i))} {
			if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: %v %v, want mode 0600", filepath.Base(f), fi.Mode(), err)
			}
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) == 0 {
		t.Fatal("no databases")
	} else {
		for _, en := range entries {
			if strings.HasSuffix(en.Name(), ".key") {
				t.Errorf("a node key file %s is in the databases' directory", en.Name())
			}
		}
	}
	// A node's database with another node's key opens nothing.
	other, err := keynet.OpenSQLite(ctx, filepath.Join(dir, "mainnet-node2.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	wrong, _ := eccrypto.GenerateKey()
	sl, _ := keynet.NewSealer(wrong)
	other.SealWith(sl)
	if _, err := other.Key(ctx, "mainnet", 2, "portico-jwt", "frank"); !errors.Is(err, keynet.ErrSealed) {
		t.Fatalf("another key opened node 2's share: %v", err)
	}
}

func TestPostgresNetwork(t *testing.T) {
	is := newIssuer(t)
	// All five nodes in one PostgreSQL schema, as many instances would
	// share a server; rows carry the node index.
	e := start(t, is, keynet.EmbeddedOptions{Networks: []string{"sapphire_mainnet"}, PostgresDSN: testsvc.Postgres(t), KeyDir: t.TempDir()})
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
