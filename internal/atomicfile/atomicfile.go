// Package atomicfile replaces a file whole: the new content goes into a
// file created beside it (a fresh name, never one opened through a link
// left at a name that could be guessed) and is renamed over it once
// complete, so a reader sees the old file or the new one, never half of
// one, and a failed write leaves the old file and no temporary behind.
package atomicfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Write replaces path with what write writes, mode 0644. Errors from
// write and from flushing the file say "writing PATH"; the others are the
// file system's own.
func Write(path string, write func(io.Writer) error) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := write(tmp); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return os.Rename(tmp.Name(), path)
}
