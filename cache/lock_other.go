//go:build !unix

package cache

import "os"

// tryLock is a no-op where flock is not available: on such systems only
// bbolt's own lock (held during each write) protects the file, and a second
// writer is not detected at Open.
func tryLock(f *os.File) (busy bool, err error) { return false, nil }

func unlock(f *os.File) error { return nil }
