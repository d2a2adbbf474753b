package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"unsafe"

	bolt "go.etcd.io/bbolt"
)

// CubinRef says where a cubin lay in the cache file when a Table was
// read, so that LoadCubin can read it later without bbolt.
type CubinRef struct {
	Hash string // sha256 hex (Record.CubinHash)
	Off  int64  // byte offset in the file; -1 if unknown
	Len  int    // length in bytes

	data []byte // a copy, where the file offset is unknown (small cubins in an inline bucket)
}

// LoadCubin reads the cubin ref locates, with one positioned read of the
// cache file at path, and checks it against ref.Hash (a cubin too small to
// have a place of its own in the file was copied by ReadTable). If the file has
// changed since ReadTable so that the bytes there no longer match, it looks
// the cubin up by its hash in the current file instead (one attempt at the
// file's lock, no waiting). It holds no file open or locked when it
// returns; an error means the cubin cannot be had now.
func LoadCubin(path string, ref CubinRef) ([]byte, error) {
	if ref.data != nil {
		return ref.data, nil
	}
	if ref.Off >= 0 && ref.Len > 0 {
		if b, err := readAt(path, ref.Off, ref.Len); err == nil && hashIs(b, ref.Hash) {
			return b, nil
		}
	}
	db, err := readerDB(path, &Options{Timeout: -1})
	if err != nil {
		return nil, err
	}
	var out []byte
	err = db.view(func(tx *bolt.Tx) error {
		if cb := tx.Bucket(bucketCubin); cb != nil {
			if v := cb.Get([]byte(ref.Hash)); v != nil && hashIs(v, ref.Hash) {
				out = bytes.Clone(v)
			}
		}
		return nil
	})
	if err == nil && out == nil {
		err = fmt.Errorf("cubin %s: %w", short(ref.Hash), ErrNotFound)
	}
	return out, err
}

func readAt(path string, off int64, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil {
		return nil, err
	}
	return b, nil
}

// hashIs reports whether b's sha256 is the hex hash h.
func hashIs(b []byte, h string) bool {
	sum := sha256.Sum256(b)
	var hx [2 * sha256.Size]byte
	hex.Encode(hx[:], sum[:])
	return string(hx[:]) == h
}

// fileOffset returns the file offset of v, a value of a read transaction
// whose memory map starts at base and sees size bytes, or -1. bbolt maps
// the file from offset 0 and hands out values that point into that map, so
// a value's address gives its offset.
func fileOffset(v []byte, base uintptr, size int64) int64 {
	if len(v) == 0 {
		return -1
	}
	off := int64(uintptr(unsafe.Pointer(unsafe.SliceData(v))) - base)
	if off < 0 || off > size-int64(len(v)) {
		return -1
	}
	return off
}
