package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWrite: the file ends up whole with mode 0644 and nothing temporary
// beside it; a failed write leaves the old file as it was; a folder that
// does not exist gets nothing.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name  string
		path  string
		fail  bool // write itself fails
		wrote bool
	}{
		{"new", filepath.Join(dir, "a.cubin"), false, true},
		{"over an old one", filepath.Join(dir, "a.cubin"), false, true},
		{"write fails", filepath.Join(dir, "a.cubin"), true, false},
		{"no folder", filepath.Join(dir, "missing", "b.cubin"), false, false},
	}
	for i, tt := range tests {
		before, _ := os.ReadFile(tt.path)
		want := []byte(fmt.Sprintf("cubin %d", i))
		err := Write(tt.path, func(w io.Writer) error {
			if _, err := w.Write(want); err != nil {
				return err
			}
			if tt.fail {
				return errors.New("disk full")
			}
			return nil
		})
		got, readErr := os.ReadFile(tt.path)
		switch {
		case tt.wrote && (err != nil || readErr != nil || !bytes.Equal(got, want)):
			t.Errorf("%s: read %q (%v, %v), want %q", tt.name, got, err, readErr, want)
		case !tt.wrote && err == nil:
			t.Errorf("%s: no error", tt.name)
		case !tt.wrote && !bytes.Equal(got, before):
			t.Errorf("%s: %q became %q", tt.name, before, got)
		}
		if tt.fail && (err == nil || !strings.Contains(err.Error(), "writing "+tt.path)) {
			t.Errorf("%s: error %v does not say it was writing %s", tt.name, err, tt.path)
		}
		if fi, err := os.Stat(tt.path); tt.wrote && (err != nil || fi.Mode().Perm() != 0o644) {
			t.Errorf("%s: mode %v (%v), want 0644", tt.name, fi.Mode(), err)
		}
		if tmps, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(tmps) > 0 {
			t.Errorf("%s: temporary files left: %v", tt.name, tmps)
		}
	}
}
