package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/gemvtune/gemvtune/internal/atomicfile"
)

// maxUserFile bounds what autotune reads of a file a user hands it (import,
// compare), after decompression: the largest export or run seen is tens of
// MB.
const maxUserFile = 1 << 30

// openRegular opens path for reading when it is a regular file, without
// blocking on a named pipe or a device (O_NONBLOCK, then a check of what
// was opened); anything else is refused with a line that says so.
func openRegular(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s: not a regular file (%s): autotune reads files only", path, kind(fi.Mode()))
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}

// readUserFile reads path ("-": standard input) whole: a regular file of at
// most max bytes, gunzipped when it starts with gzip's magic, and at most
// max bytes after that, so that /dev/zero, a sparse 8 GB file or a gzip
// bomb is an error, not an out-of-memory crash.
func readUserFile(path string, max int64) ([]byte, error) {
	var r io.Reader
	if path == "-" {
		r = os.Stdin
	} else {
		f, fi, err := openRegular(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if fi.Size() > max {
			return nil, fmt.Errorf("%s: %d bytes, more than the %d MiB autotune reads", path, fi.Size(), max>>20)
		}
		r = f
	}
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: gzip: %v", path, err)
		}
		defer zr.Close()
		return readAtMost(path, zr, max, "expands to")
	}
	return readAtMost(path, br, max, "holds")
}

func readAtMost(path string, r io.Reader, max int64, verb string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: %s more than the %d MiB autotune reads", path, verb, max>>20)
	}
	return b, nil
}

// writeUserFile writes path whole through write (atomicfile: a new file
// renamed over it once complete, so an interrupted write leaves no half
// file and the old one stands). A symbolic link, a folder or any other
// non-regular file at path is refused, not followed or replaced.
func writeUserFile(path string, write func(io.Writer) error) error {
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		what := kind(fi.Mode())
		if fi.Mode()&fs.ModeSymlink != 0 {
			what = "a symbolic link"
		}
		return fmt.Errorf("%s: %s: autotune writes a regular file of its own there, never through or over anything else", path, what)
	}
	return atomicfile.Write(path, write)
}
