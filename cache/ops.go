package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/gemvtune/gemvtune/space"
	bolt "go.etcd.io/bbolt"
)

// CubinHash returns the sha256 (hex) under which a cubin is stored.
func CubinHash(cubin []byte) string {
	h := sha256.Sum256(cubin)
	return hex.EncodeToString(h[:])
}

// Put stores rec and its winner's cubin (nil: none) in one transaction,
// replacing the entry of the same key. When rec has an exact alternative
// (rec.Exact), exactCubin may follow: the alternative's cubin (at most one;
// nil or absent: none), stored once per content like the winner's. It
// fills in Schema (must be 0 or SchemaVersion), ToolVersion (if empty),
// Time (if zero: now), Layout (= Params.L), CubinHash and Exact.CubinHash,
// and validates the record.
func (db *DB) Put(rec Record, cubin []byte, exactCubin ...[]byte) error {
	var xc []byte
	switch {
	case len(exactCubin) > 1:
		return fmt.Errorf("%w %s: Put takes at most one exact-alternative cubin, got %d", ErrBadRecord, rec.Key, len(exactCubin))
	case len(exactCubin) == 1:
		xc = exactCubin[0]
	}
	if len(xc) > 0 && rec.Exact == nil {
		return fmt.Errorf("%w %s: a cubin for an exact alternative the record does not have", ErrBadRecord, rec.Key)
	}
	data, sum, err := prepare(&rec, cubin, xc)
	if err != nil {
		return err
	}
	return db.update(func(tx *bolt.Tx) error {
		ix, err := loadIndex(tx)
		if err != nil {
			return err
		}
		if err := putTx(tx, ix, rec, data, sum, cubin, xc); err != nil {
			return err
		}
		return ix.save(tx)
	})
}

func prepare(rec *Record, cubin, exactCubin []byte) (data, sum []byte, err error) {
	if rec.Schema == 0 {
		rec.Schema = SchemaVersion
	}
	if rec.Schema != SchemaVersion {
		return nil, nil, fmt.Errorf("%w %s: schema %d, this autotune writes %d", ErrBadRecord, rec.Key, rec.Schema, SchemaVersion)
	}
	if rec.ToolVersion == "" {
		rec.ToolVersion = ToolVersion
	}
	if rec.Time.IsZero() {
		rec.Time = time.Now().UTC()
	}
	rec.Layout = rec.Params.L
	rec.CubinHash = ""
	if len(cubin) > 0 {
		rec.CubinHash = CubinHash(cubin)
	}
	if rec.Exact != nil {
		x := *rec.Exact // the caller's stays as it was
		x.CubinHash = ""
		if len(exactCubin) > 0 {
			x.CubinHash = CubinHash(exactCubin)
		}
		rec.Exact = &x
	}
	rec.sanitize()
	if err := rec.Validate(); err != nil {
		return nil, nil, err
	}
	if data, err = json.Marshal(rec); err != nil {
		return nil, nil, fmt.Errorf("encoding record %s: %w", rec.Key, err)
	}
	return data, encodeSummary(rec.Summary()), nil
}

func putTx(tx *bolt.Tx, ix *index, rec Record, data, sum, cubin, exactCubin []byte) error {
	ab, err := tx.CreateBucketIfNotExists([]byte(rec.Arch))
	if err != nil {
		return fmt.Errorf("storing %s: %w", rec.Key, err)
	}
	fb, err := ab.CreateBucketIfNotExists([]byte(rec.Format))
	if err != nil {
		return fmt.Errorf("storing %s: %w", rec.Key, err)
	}
	sk := []byte(rec.Shape().String())
	oldHashes := storedCubinHashes(fb.Get(sk))
	if err := fb.Put(sk, data); err != nil {
		return fmt.Errorf("storing %s: %w", rec.Key, err)
	}
	ix.set(rec.Key.String(), sum)
	if rec.CubinHash != "" {
		if err := addCubin(tx, rec.CubinHash, cubin); err != nil {
			return err
		}
	}
	if rec.Exact != nil && rec.Exact.CubinHash != "" {
		if err := addCubin(tx, rec.Exact.CubinHash, exactCubin); err != nil {
			return err
		}
	}
	return dropCubins(tx, oldHashes)
}

// storedCubinHashes reads the cubin hashes of a stored record (the
// winner's, the exact alternative's), "" where none.
func storedCubinHashes(v []byte) [2]string {
	if v == nil {
		return [2]string{}
	}
	var r struct {
		H string `json:"cubin_sha256"`
		X *struct {
			H string `json:"cubin_sha256"`
		} `json:"exact"`
	}
	if json.Unmarshal(v, &r) != nil {
		return [2]string{}
	}
	out := [2]string{r.H}
	if r.X != nil {
		out[1] = r.X.H
	}
	return out
}

// dropCubins is dropCubin for each hash that is not "".
func dropCubins(tx *bolt.Tx, hashes [2]string) error {
	for _, h := range hashes {
		if h != "" {
			if err := dropCubin(tx, h); err != nil {
				return err
			}
		}
	}
	return nil
}

// addCubin stores the cubin once and counts one more record using it.
func addCubin(tx *bolt.Tx, hash string, cubin []byte) error {
	cb, err := tx.CreateBucketIfNotExists(bucketCubin)
	if err != nil {
		return err
	}
	rb, err := tx.CreateBucketIfNotExists(bucketRefs)
	if err != nil {
		return err
	}
	if cb.Get([]byte(hash)) == nil {
		if err := cb.Put([]byte(hash), cubin); err != nil {
			return fmt.Errorf("storing cubin %s: %w", short(hash), err)
		}
	}
	n, _ := strconv.Atoi(string(rb.Get([]byte(hash))))
	return rb.Put([]byte(hash), []byte(strconv.Itoa(n+1)))
}

// dropCubin counts one record less using the cubin and deletes it at zero.
func dropCubin(tx *bolt.Tx, hash string) error {
	cb, rb := tx.Bucket(bucketCubin), tx.Bucket(bucketRefs)
	if cb == nil || rb == nil {
		return nil
	}
	n, _ := strconv.Atoi(string(rb.Get([]byte(hash))))
	if n > 1 {
		return rb.Put([]byte(hash), []byte(strconv.Itoa(n-1)))
	}
	if err := rb.Delete([]byte(hash)); err != nil {
		return err
	}
	return cb.Delete([]byte(hash))
}

// recordBucket returns the format bucket of k, or nil.
func recordBucket(tx *bolt.Tx, k Key) *bolt.Bucket {
	ab := tx.Bucket([]byte(k.Arch))
	if ab == nil {
		return nil
	}
	return ab.Bucket([]byte(k.Format))
}

// Get returns the record stored under k: ErrNotFound if there is none,
// ErrBadRecord if it does not decode.
func (db *DB) Get(k Key) (Record, error) {
	if err := k.Validate(); err != nil {
		return Record{}, err
	}
	var rec Record
	found := false
	err := db.view(func(tx *bolt.Tx) error {
		fb := recordBucket(tx, k)
		if fb == nil {
			return nil
		}
		v := fb.Get([]byte(k.Shape().String()))
		if v == nil {
			return nil
		}
		found = true
		var err error
		rec, err = decodeAt(k, v)
		return err
	})
	if err == nil && !found {
		err = fmt.Errorf("%s: %w", k, ErrNotFound)
	}
	return rec, err
}

// decodeAt decodes the record stored under k and checks that it names k.
// A record of another schema takes its key from k.
func decodeAt(k Key, v []byte) (Record, error) {
	rec, err := DecodeRecord(v)
	if err != nil {
		return Record{Key: k}, fmt.Errorf("%s: %w", k, err)
	}
	if rec.Schema != SchemaVersion {
		rec.Key = k
	} else if rec.Key != k {
		return Record{Key: k}, fmt.Errorf("%s: %w: record names %s", k, ErrBadRecord, rec.Key)
	}
	return rec, nil
}

// Walk calls fn for every record of arch ("" = every arch), in storage
// order (arch, format, then shape key as bytes), after the read transaction
// has ended. A stored value that does not decode is passed as a Record
// holding only its key and an error matching ErrBadRecord, so callers can
// skip or report it. An error from fn stops the walk and is returned.
func (db *DB) Walk(arch string, fn func(rec Record, err error) error) error {
	type item struct {
		rec Record
		err error
	}
	var items []item
	err := db.view(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, ab *bolt.Bucket) error {
			if len(name) > 0 && name[0] == '_' || arch != "" && string(name) != arch {
				return nil
			}
			return ab.ForEach(func(format, v []byte) error {
				fb := ab.Bucket(format)
				if fb == nil {
					items = append(items, item{Record{Key: Key{Arch: string(name), Format: string(format)}},
						fmt.Errorf("%s/%s: %w: a value where a format bucket belongs", name, format, ErrBadRecord)})
					return nil
				}
				return fb.ForEach(func(sk, v []byte) error {
					k := Key{Arch: string(name), Format: string(format)}
					sh, err := space.ParseShape(string(sk))
					if err != nil {
						items = append(items, item{Record{Key: k}, fmt.Errorf("%s/%s: %w: %w", name, format, ErrBadRecord, err)})
						return nil
					}
					k.Rows, k.Cols = sh.Rows, sh.Cols
					if v == nil {
						items = append(items, item{Record{Key: k}, fmt.Errorf("%s: %w: a bucket where a record belongs", k, ErrBadRecord)})
						return nil
					}
					rec, err := decodeAt(k, v)
					items = append(items, item{rec, err})
					return nil
				})
			})
		})
	})
	if err != nil {
		return err
	}
	for _, it := range items {
		if err := fn(it.rec, it.err); err != nil {
			return err
		}
	}
	return nil
}

// All returns the records of arch ("" = every arch) sorted by arch, format,
// rows and cols. Records that do not decode are left out; the returned
// error then matches ErrBadRecord and names the first of them, and the
// good records are still returned.
func (db *DB) All(arch string) ([]Record, error) {
	var recs []Record
	var bad []error
	err := db.Walk(arch, func(r Record, err error) error {
		if err != nil {
			bad = append(bad, err)
			return nil
		}
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	SortRecords(recs)
	if len(bad) > 0 {
		return recs, fmt.Errorf("%d unreadable record(s), first: %w", len(bad), bad[0])
	}
	return recs, nil
}

// SortRecords sorts by arch, format, rows, then cols.
func SortRecords(recs []Record) {
	sort.Slice(recs, func(i, j int) bool { return keyLess(recs[i].Key, recs[j].Key) })
}

func keyLess(a, b Key) bool {
	switch {
	case a.Arch != b.Arch:
		return a.Arch < b.Arch
	case a.Format != b.Format:
		return a.Format < b.Format
	case a.Rows != b.Rows:
		return a.Rows < b.Rows
	}
	return a.Cols < b.Cols
}

// Cubin returns the cubin stored under its sha256 hex hash (Record.CubinHash).
func (db *DB) Cubin(hash string) ([]byte, error) {
	var out []byte
	err := db.view(func(tx *bolt.Tx) error {
		if cb := tx.Bucket(bucketCubin); cb != nil {
			out = bytes.Clone(cb.Get([]byte(hash)))
		}
		return nil
	})
	if err == nil && out == nil {
		err = fmt.Errorf("cubin %s: %w", short(hash), ErrNotFound)
	}
	return out, err
}

// Delete removes the record under k (and its cubin when no other record
// uses it) in one transaction. ErrNotFound if there is none.
func (db *DB) Delete(k Key) error {
	if err := k.Validate(); err != nil {
		return err
	}
	return db.update(func(tx *bolt.Tx) error {
		fb := recordBucket(tx, k)
		sk := []byte(k.Shape().String())
		if fb == nil || fb.Get(sk) == nil {
			return fmt.Errorf("%s: %w", k, ErrNotFound)
		}
		hashes := storedCubinHashes(fb.Get(sk))
		if err := fb.Delete(sk); err != nil {
			return err
		}
		ix, err := loadIndex(tx)
		if err != nil {
			return err
		}
		ix.del(k.String())
		if err := ix.save(tx); err != nil {
			return err
		}
		if err := dropCubins(tx, hashes); err != nil {
			return err
		}
		return pruneEmpty(tx, k)
	})
}

// pruneEmpty deletes k's format bucket and arch bucket once they are empty.
func pruneEmpty(tx *bolt.Tx, k Key) error {
	ab := tx.Bucket([]byte(k.Arch))
	if f, _ := ab.Bucket([]byte(k.Format)).Cursor().First(); f == nil {
		if err := ab.DeleteBucket([]byte(k.Format)); err != nil {
			return err
		}
	}
	if f, _ := ab.Cursor().First(); f == nil {
		return tx.DeleteBucket([]byte(k.Arch))
	}
	return nil
}
