package main

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hostileGGUF is a GGUF header with one metadata entry key = v (type
// typ) and the given tensor count, padded to 1.2 MB.
func hostileGGUF(t *testing.T, path string, tensors uint64, key string, typ uint32, v uint64) {
	t.Helper()
	var b bytes.Buffer
	le := func(x any) { binary.Write(&b, binary.LittleEndian, x) }
	b.WriteString("GGUF")
	le(uint32(3))
	le(tensors)
	le(uint64(1))
	le(uint64(len(key)))
	b.WriteString(key)
	le(typ)
	switch typ {
	case 4:
		le(uint32(v))
	case 10:
		le(v)
	}
	b.Write(make([]byte, 1200*1024))
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHostileGGUF: headers that crashed the parser (huge counts, a zero
// alignment) are one-line errors before it runs; so are a named pipe and a
// device, which are refused without blocking.
func TestHostileGGUF(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.gguf")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, want string
		tensors    uint64
		key        string
		typ        uint32
		v          uint64
		path       string
	}{
		{"split.tensors.count 2^33", "split.tensors.count = 8589934592", 0, "split.tensors.count", 10, 1 << 33, ""},
		{"split.tensors.count 2^63-1", "split.tensors.count = 9223372036854775807", 0, "split.tensors.count", 10, 1<<63 - 1, ""},
		{"alignment 0", "general.alignment = 0", 0, "general.alignment", 4, 0, ""},
		{"alignment 3", "general.alignment = 3", 0, "general.alignment", 4, 3, ""},
		{"tensor count 2^40", "claims 1099511627776 tensors", 1 << 40, "x", 4, 1, ""},
		{"named pipe", "named pipe", 0, "", 0, 0, fifo},
		{"device", "device", 0, "", 0, 0, "/dev/zero"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path
			if path == "" {
				path = filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".gguf")
				hostileGGUF(t, path, tc.tensors, tc.key, tc.typ, tc.v)
			}
			done := make(chan error, 1)
			go func() { _, err := readGGUF(path); done <- err }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
					t.Errorf("error %v; want one line containing %q", err, tc.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("readGGUF blocked")
			}
		})
	}
}

// TestReadUserFileBounds: a gzip bomb, a file over the bound, a pipe and a
// device are errors; a gzipped file within the bound is read.
func TestReadUserFileBounds(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zw.Write(make([]byte, 4<<20))
	zw.Close()
	var small bytes.Buffer
	zw = gzip.NewWriter(&small)
	zw.Write([]byte(`{"kind":"x"}`))
	zw.Close()
	sparse := filepath.Join(dir, "sparse")
	f, _ := os.Create(sparse)
	f.Truncate(8 << 20)
	f.Close()
	fifo := filepath.Join(dir, "fifo")
	syscall.Mkfifo(fifo, 0o600)
	const bound = 1 << 20
	for _, tc := range []struct {
		path, want string
	}{
		{write("bomb.gz", bomb.Bytes()), "expands to more than"},
		{sparse, "more than the 1 MiB"},
		{fifo, "named pipe"},
		{"/dev/zero", "device"},
		{dir, "folder"},
	} {
		if _, err := readUserFile(tc.path, bound); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.path, err, tc.want)
		}
	}
	if b, err := readUserFile(write("ok.json.gz", small.Bytes()), bound); err != nil || string(b) != `{"kind":"x"}` {
		t.Errorf("small gzip: %q, %v", b, err)
	}
}

// TestWriteUserFile: a regular file or none at the path ends up holding
// what was written; a symbolic link, a folder or a failed write leaves
// every file as it was, and no temporary file behind.
func TestWriteUserFile(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	mk := func(name string, setup func(p string) error) string {
		p := filepath.Join(dir, name)
		if err := setup(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name  string
		path  string
		fail  bool // the write itself fails
		wants string
	}{
		{"new", filepath.Join(dir, "new.html"), false, ""},
		{"existing", mk("old.html", func(p string) error { return os.WriteFile(p, []byte("old"), 0o644) }), false, ""},
		{"symlink", mk("link.html", func(p string) error { return os.Symlink(victim, p) }), false, "a symbolic link"},
		{"dangling symlink", mk("dangling.html", func(p string) error { return os.Symlink(filepath.Join(dir, "none"), p) }), false, "a symbolic link"},
		{"folder", mk("folder.html", func(p string) error { return os.Mkdir(p, 0o755) }), false, "a folder"},
		{"write fails", mk("kept.html", func(p string) error { return os.WriteFile(p, []byte("old"), 0o644) }), true, "writing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := os.ReadFile(tt.path)
			err := writeUserFile(tt.path, func(w io.Writer) error {
				if _, err := io.WriteString(w, "<html>"); err != nil {
					return err
				}
				if tt.fail {
					return errors.New("disk full")
				}
				return nil
			})
			if tt.wants == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got, _ := os.ReadFile(tt.path); string(got) != "<html>" {
					t.Errorf("file holds %q", got)
				}
				if fi, err := os.Stat(tt.path); err != nil || fi.Mode().Perm() != 0o644 {
					t.Errorf("file mode %v (%v), want 0644", fi.Mode(), err)
				}
			} else {
				if err == nil || !strings.Contains(err.Error(), tt.wants) || !strings.Contains(err.Error(), tt.path) {
					t.Errorf("error %v, want one naming %s and saying %q", err, tt.path, tt.wants)
				}
				if after, _ := os.ReadFile(tt.path); !bytes.Equal(before, after) {
					t.Errorf("%s changed: %q, then %q", tt.path, before, after)
				}
			}
			if got, _ := os.ReadFile(victim); string(got) != "keep me" {
				t.Errorf("the link's target holds %q", got)
			}
			if tmps, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(tmps) > 0 {
				t.Errorf("temporary files left: %v", tmps)
			}
		})
	}
}
