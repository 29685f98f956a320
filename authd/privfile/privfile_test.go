package privfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPrepare(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	cases := []struct {
		name string
		pre  func(path string)
	}{
		{"new file in a new directory", func(string) {}},
		{"existing file readable by others", func(p string) { _ = os.WriteFile(p, []byte("x"), 0o644); _ = os.WriteFile(p+"-wal", nil, 0o644) }},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, "db"+string(rune('0'+i)))
			if i > 0 {
				c.pre(path)
			}
			if err := Prepare(path); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{path, path + "-wal"} {
				fi, err := os.Stat(p)
				if p == path+"-wal" && os.IsNotExist(err) {
					continue
				}
				if err != nil || fi.Mode().Perm() != 0o600 {
					t.Errorf("%s: %v %v", p, fi.Mode(), err)
				}
			}
			if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
				t.Errorf("directory mode %v", fi.Mode())
			}
		})
	}
}
