package cache_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune/cache"
)

// TestWriterRefusesSymlink: a writer opened at a symbolic link fails with
// one line naming the link, and writes nothing into what the link points
// at (a cache, an empty file, nothing at all); a reader follows the link.
func TestWriterRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	real, _ := openWriter(t) // an existing, valid cache
	realPath := real.Path()
	real.Close()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		target string
		reads  bool // a reader through the link succeeds
	}{
		{"to a cache", realPath, true},
		{"to an empty file", empty, true},
		{"dangling", filepath.Join(dir, "nothing-here"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := os.ReadFile(tt.target)
			link := filepath.Join(t.TempDir(), "tune.db")
			if err := os.Symlink(tt.target, link); err != nil {
				t.Fatal(err)
			}
			db, err := cache.Open(link, nil)
			if err == nil {
				db.Close()
				t.Fatal("a writer opened a cache through a symbolic link")
			}
			if msg := err.Error(); !strings.Contains(msg, link) || !strings.Contains(msg, "symbolic link") || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line naming %s as a symbolic link", msg, link)
			}
			after, statErr := os.ReadFile(tt.target)
			if !bytes.Equal(before, after) || (before == nil) != os.IsNotExist(statErr) {
				t.Errorf("the link's target changed: %d bytes before, %d after (%v)", len(before), len(after), statErr)
			}
			if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the link itself was replaced or removed: %v", err)
			}
			r, err := cache.Open(link, &cache.Options{ReadOnly: true})
			if (err == nil) != tt.reads {
				t.Errorf("reader through the link: %v, want it to succeed: %t", err, tt.reads)
			}
			if r != nil {
				r.Close()
			}
		})
	}
}
