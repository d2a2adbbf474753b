package cache

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/gemvtune/gemvtune/internal/lockfile"
)

// FileVersion is the layout version of the bbolt file (bucket _meta, key
// "layout"). A file of a newer version is refused with ErrVersion; one of
// oldFileVersion is read from its records and rewritten by the first
// writer that opens it (migrate.go).
const FileVersion = 2

// oldFileVersion is the layout before the GPU model was part of the key:
// arch → format → shape → record JSON.
const oldFileVersion = 1

// DefaultTimeout is how long Open and each operation wait for a lock when
// Options.Timeout is 0.
const DefaultTimeout = 2 * time.Second

// Bucket names at the top level; arch buckets ("sm_90") never start with '_'.
var (
	bucketMeta  = []byte("_meta")
	bucketCubin = []byte("_cubins")
	bucketRefs  = []byte("_cubinrefs")
	keyLayout   = []byte("layout")
)

// Options configures Open. A nil *Options means the zero value.
type Options struct {
	// ReadOnly opens an existing cache for reading: no lock file is taken,
	// Open returns ErrNotExist for a missing file, and Put, Delete and
	// Import return ErrReadOnly. False opens it for writing, creating the
	// file (and its folder, with a README.txt) if needed.
	ReadOnly bool

	// Timeout bounds every wait for a lock: a writer's lock file at Open,
	// and the bbolt file's lock during each operation (readers wait for a
	// write transaction, writers for readers). 0 means DefaultTimeout; a
	// negative value means try once. It never waits forever.
	Timeout time.Duration
}

// DB is an open cache. Its methods are safe for concurrent use.
type DB struct {
	path     string
	readOnly bool
	timeout  time.Duration

	mu     sync.Mutex     // one bbolt handle of this DB at a time
	lock   *lockfile.Lock // a writer's PATH.lock, held until Close
	closed atomic.Bool

	migrated string // what Open did to a file of the older layout, or ""
}

// Migrated says, in one line, how Open rewrote a file of the older layout
// (GPU models were not part of its keys), or "" when it did not.
func (db *DB) Migrated() string { return db.migrated }

// Open opens the cache file at path (see Options). A writer first takes
// PATH.lock; if another process holds it past Options.Timeout, Open
// returns an error matching ErrLocked: "cache PATH is locked by another
// autotune (pid N)". A file that is not a readable gemvtune cache gives
// ErrCorrupt (never a panic), one of another layout ErrVersion.
func Open(path string, opts *Options) (*DB, error) {
	return OpenContext(context.Background(), path, opts)
}

// OpenContext is Open whose wait for a writer's lock file also ends when
// ctx does (an interrupted run stops waiting), with ctx's error wrapped.
func OpenContext(ctx context.Context, path string, opts *Options) (*DB, error) {
	if path == "" {
		return nil, errors.New("cache: empty path")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.ReadOnly {
		rdb, err := readerDB(path, &o)
		if err != nil {
			return nil, err
		}
		if err := rdb.view(func(tx *bolt.Tx) error { _, err := rdb.checkMeta(tx); return err }); err != nil {
			return nil, err
		}
		return rdb, nil
	}
	db := &DB{path: path, timeout: o.Timeout}
	if db.timeout == 0 {
		db.timeout = DefaultTimeout
	}
	if err := ensureDir(path); err != nil {
		return nil, err
	}
	if err := db.acquire(ctx); err != nil {
		return nil, err
	}
	if err := db.update(db.initMeta); err != nil {
		db.release()
		return nil, err
	}
	return db, nil
}

// Path returns the cache file's path.
func (db *DB) Path() string { return db.path }

// ReadOnly reports whether db was opened read-only.
func (db *DB) ReadOnly() bool { return db.readOnly }

// Close releases a writer's lock. Closing twice is not an error.
func (db *DB) Close() error {
	if db.closed.Swap(true) {
		return nil
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.release()
}

func (db *DB) release() error {
	err := db.lock.Release()
	db.lock = nil
	return err
}

// lockedError is the message a second writer gets; it matches ErrLocked.
type lockedError struct {
	path string
	busy *lockfile.Busy
}

func (e *lockedError) Error() string {
	return fmt.Sprintf("cache %s is locked by %s", e.path, e.busy.Holder)
}
func (e *lockedError) Unwrap() error { return ErrLocked }

// acquire takes PATH.lock (lockfile: no symlink followed, nothing written
// into a file it did not create). The file is never removed: removing it
// could let two writers lock two different files.
func (db *DB) acquire(ctx context.Context) error {
	l, err := lockfile.Acquire(ctx, db.path+".lock", max(db.timeout, 0), nil)
	var b *lockfile.Busy
	if errors.As(err, &b) {
		return &lockedError{path: db.path, busy: b}
	}
	if err != nil {
		return fmt.Errorf("cache %s: %w", db.path, err)
	}
	db.lock = l
	return nil
}

func (db *DB) view(fn func(*bolt.Tx) error) error { return db.run(false, fn) }

func (db *DB) update(fn func(*bolt.Tx) error) error {
	if db.readOnly {
		return fmt.Errorf("cache %s: %w", db.path, ErrReadOnly)
	}
	return db.run(true, fn)
}

// run opens the bbolt file for one transaction. A reader sees an empty
// (zero-length) file as an empty cache and does not call fn. Panics and
// memory faults inside bbolt (corrupt pages) become ErrCorrupt.
func (db *DB) run(write bool, fn func(*bolt.Tx) error) (err error) {
	if db.closed.Load() {
		return fmt.Errorf("cache %s: %w", db.path, ErrClosed)
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if !write {
		fi, err := os.Stat(db.path)
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cache %s: %w", db.path, ErrNotExist)
		}
		if err == nil && fi.Size() == 0 {
			return nil
		}
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cache %s: %w: a damaged bbolt file: %v%s", db.path, ErrCorrupt, r, damagedAdvice)
		}
	}()
	t := db.timeout
	if t < 0 {
		t = time.Nanosecond
	}
	o := &bolt.Options{ReadOnly: !write, Timeout: t}
	if write {
		o.OpenFile = openNoFollow
	}
	bdb, err := bolt.Open(db.path, 0o644, o)
	if err != nil {
		return db.openError(err)
	}
	defer bdb.Close()
	if write {
		return bdb.Update(fn)
	}
	return bdb.View(fn)
}

// openNoFollow opens the file a writer changes without following a
// symbolic link at its path: a link is refused (ELOOP), so a write never
// lands in a file the link's maker chose. Readers follow links, as a
// mounted configuration (a Kubernetes ConfigMap) is a tree of them.
func openNoFollow(name string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag|syscall.O_NOFOLLOW, perm)
}

func (db *DB) openError(err error) error {
	switch {
	case errors.Is(err, syscall.ELOOP):
		return fmt.Errorf("cache %s: a symbolic link: autotune writes a cache at its own path, never through a link (give --cache or GEMV_TUNE_CACHE the file it points to)", db.path)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("cache %s: %w", db.path, ErrNotExist)
	case errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("cache %s: %w: another process held it for more than %v", db.path, ErrLocked, db.timeout)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("cache %s: %w", db.path, err)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrVersionMismatch):
		return fmt.Errorf("cache %s: %w: not a bbolt database (is --cache or GEMV_TUNE_CACHE the right file? it was left as it is)", db.path, ErrCorrupt)
	}
	return fmt.Errorf("cache %s: %w: a damaged bbolt file: %v%s", db.path, ErrCorrupt, err, damagedAdvice)
}

// damagedAdvice ends the error for a bbolt file whose pages do not read:
// the tune it held is lost either way, and moving it aside keeps it for a
// look where deleting would not.
const damagedAdvice = " (move it aside and re-run autotune)"

// checkMeta accepts a gemvtune cache of FileVersion or oldFileVersion
// (returned), or a bbolt file with no buckets at all (an empty cache,
// FileVersion).
func (db *DB) checkMeta(tx *bolt.Tx) (int, error) {
	m := tx.Bucket(bucketMeta)
	if m == nil {
		if k, _ := tx.Cursor().First(); k != nil {
			return 0, fmt.Errorf("cache %s: %w: a bbolt file without gemvtune's _meta bucket", db.path, ErrCorrupt)
		}
		return FileVersion, nil
	}
	switch v := string(m.Get(keyLayout)); v {
	case strconv.Itoa(FileVersion):
		return FileVersion, nil
	case strconv.Itoa(oldFileVersion):
		return oldFileVersion, nil
	default:
		return 0, fmt.Errorf("cache %s: %w: layout %q, this autotune reads %d (and rewrites %d)", db.path, ErrVersion,
			v, FileVersion, oldFileVersion)
	}
}

// initMeta creates the top-level buckets of a new cache, and rewrites a
// file of the older layout in the current one.
func (db *DB) initMeta(tx *bolt.Tx) error {
	layout, err := db.checkMeta(tx)
	if err != nil {
		return err
	}
	if layout == oldFileVersion {
		if db.migrated, err = migrate(tx); err != nil {
			return fmt.Errorf("cache %s: rewriting layout %d: %w", db.path, oldFileVersion, err)
		}
		db.migrated = fmt.Sprintf("cache %s: layout %d → %d (GPU models in the keys): %s", db.path, oldFileVersion,
			FileVersion, db.migrated)
	}
	if tx.Bucket(bucketMeta) == nil {
		m, err := tx.CreateBucket(bucketMeta)
		if err != nil {
			return err
		}
		if err := m.Put(keyLayout, []byte(strconv.Itoa(FileVersion))); err != nil {
			return err
		}
	}
	for _, b := range [][]byte{bucketCubin, bucketRefs} {
		if _, err := tx.CreateBucketIfNotExists(b); err != nil {
			return fmt.Errorf("cache %s: %w", db.path, err)
		}
	}
	return nil
}
