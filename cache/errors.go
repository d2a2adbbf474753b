package cache

import "errors"

// Errors returned (wrapped, with the path and the cause) when opening a cache
// or running an operation on it. Test for them with errors.Is.
var (
	// ErrNotExist is returned when a cache opened read-only does not exist.
	ErrNotExist = errors.New("does not exist")

	// ErrCorrupt is returned when the file is not a readable gemvtune cache:
	// garbage, truncated, another program's bbolt file, or a bbolt panic.
	ErrCorrupt = errors.New("not a readable gemvtune cache")

	// ErrVersion is returned when the file was written with another layout
	// version (FileVersion) than this package reads.
	ErrVersion = errors.New("written with another cache layout version")

	// ErrLocked is returned when a writer cannot get the cache's lock in time,
	// either because another autotune writes it or because a reader held it
	// for longer than Options.Timeout.
	ErrLocked = errors.New("locked")

	// ErrReadOnly is returned by Put, Delete and Import on a read-only DB.
	ErrReadOnly = errors.New("opened read-only")

	// ErrClosed is returned by operations on a closed DB.
	ErrClosed = errors.New("closed")
)

// Errors returned for single entries.
var (
	// ErrNotFound is returned by Get, Delete and Cubin for a missing entry.
	ErrNotFound = errors.New("not in the cache")

	// ErrBadRecord is returned when a stored or imported record does not
	// decode or does not validate.
	ErrBadRecord = errors.New("bad record")

	// ErrBadKey is returned for an invalid arch, format or shape in a Key.
	ErrBadKey = errors.New("bad cache key")
)
