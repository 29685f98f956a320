package store_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/porticohq/portico/store"
	"github.com/porticohq/portico/store/sqldb"
)

// A store written by a newer Portico is refused, and the error says which
// database and which schema, so an operator with several knows where to
// look.
func TestOpenRefusesNewerStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "portico.db")
	s, err := store.OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (99, 0)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = store.OpenSQLite(ctx, path)
	if !errors.Is(err, sqldb.ErrNewer) || !strings.HasPrefix(err.Error(), "store: sqlite "+path+": schema_migrations: ") {
		t.Fatalf("newer store: %v", err)
	}
}
