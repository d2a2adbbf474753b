package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
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
// fills in Schema (must be 0 or SchemaVersion), Model (if empty:
// NormalizeModel(GPUName)), ToolVersion (if empty), Time (if zero: now),
// Layout (= Params.L), CubinHash and Exact.CubinHash, and validates the
// record.
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
	data, err := prepare(&rec, cubin, xc)
	if err != nil {
		return err
	}
	return db.update(func(tx *bolt.Tx) error {
		ix := loadIndex(tx)
		if err := putTx(tx, ix, rec, data, cubin, xc); err != nil {
			return err
		}
		return ix.save(tx)
	})
}

// prepare completes rec as Put does and returns its stored value.
func prepare(rec *Record, cubin, exactCubin []byte) ([]byte, error) {
	if rec.Schema == 0 {
		rec.Schema = SchemaVersion
	}
	if rec.Schema != SchemaVersion {
		return nil, fmt.Errorf("%w %s: schema %d, this autotune writes %d", ErrBadRecord, rec.Key, rec.Schema, SchemaVersion)
	}
	if rec.Model == "" {
		rec.Model = NormalizeModel(rec.GPUName)
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
	return rec.seal()
}

// seal replaces r's non-finite figures by 0, validates it and returns its
// stored value: its JSON after the checksum (sealValue).
func (r *Record) seal() ([]byte, error) {
	r.sanitize()
	if err := r.Validate(); err != nil {
		return nil, err
	}
	data, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encoding record %s: %w", r.Key, err)
	}
	return sealValue(data), nil
}

// A stored record is its JSON after a CRC-32C of that JSON (u32,
// little-endian), so that a damaged byte is found when the record is read.
func sealValue(data []byte) []byte {
	v := binary.LittleEndian.AppendUint32(make([]byte, 0, 4+len(data)), crc32.Checksum(data, castagnoli))
	return append(v, data...)
}

// openValue checks a stored record's checksum and returns its JSON.
func openValue(k Key, v []byte) ([]byte, error) {
	if len(v) < 4 || crc32.Checksum(v[4:], castagnoli) != binary.LittleEndian.Uint32(v) {
		return nil, fmt.Errorf("%s: %w: checksum mismatch (the entry is damaged)", k, ErrBadRecord)
	}
	return v[4:], nil
}

func putTx(tx *bolt.Tx, ix *index, rec Record, value, cubin, exactCubin []byte) error {
	fb, err := createRecordBucket(tx, rec.Key)
	if err != nil {
		return fmt.Errorf("storing %s: %w", rec.Key, err)
	}
	sk := []byte(rec.Shape().String())
	oldHashes := storedCubinHashes(rec.Key, fb.Get(sk))
	if err := fb.Put(sk, value); err != nil {
		return fmt.Errorf("storing %s: %w", rec.Key, err)
	}
	ix.set(rec.Summary())
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

// createRecordBucket returns k's format bucket (arch, model, format),
// creating what is missing.
func createRecordBucket(tx *bolt.Tx, k Key) (*bolt.Bucket, error) {
	b, err := tx.CreateBucketIfNotExists([]byte(k.Arch))
	for _, name := range []string{k.Model, k.Format} {
		if err != nil {
			return nil, err
		}
		b, err = b.CreateBucketIfNotExists([]byte(name))
	}
	return b, err
}

// storedCubinHashes reads the cubin hashes of a stored record (the
// winner's, the exact alternative's), "" where none.
func storedCubinHashes(k Key, v []byte) [2]string {
	data, err := openValue(k, v)
	if v == nil || err != nil {
		return [2]string{}
	}
	var r struct {
		H string `json:"cubin_sha256"`
		X *struct {
			H string `json:"cubin_sha256"`
		} `json:"exact"`
	}
	if json.Unmarshal(data, &r) != nil {
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

// resolveModel fills in k.Model when it is "": the one model of k's arch
// that holds k's format and shape. ErrNotFound when none does, ErrBadKey
// when several do.
func resolveModel(tx *bolt.Tx, k Key) (Key, error) {
	if k.Model != "" {
		return k, nil
	}
	ab := tx.Bucket([]byte(k.Arch))
	if ab == nil {
		return k, fmt.Errorf("%s: %w", k, ErrNotFound)
	}
	var models []string
	_ = ab.ForEach(func(m, v []byte) error {
		if mb := ab.Bucket(m); v == nil && mb != nil {
			if fb := mb.Bucket([]byte(k.Format)); fb != nil && fb.Get([]byte(k.Shape().String())) != nil {
				models = append(models, string(m))
			}
		}
		return nil
	})
	switch len(models) {
	case 0:
		return k, fmt.Errorf("%s: %w", k, ErrNotFound)
	case 1:
		k.Model = models[0]
		return k, nil
	}
	return k, fmt.Errorf("%w %s: records of %d GPU models (%v): name one", ErrBadKey, k, len(models), models)
}

// recordBucket returns the format bucket of k (k.Model set), or nil.
func recordBucket(tx *bolt.Tx, k Key) *bolt.Bucket {
	b := tx.Bucket([]byte(k.Arch))
	for _, name := range []string{k.Model, k.Format} {
		if b == nil {
			return nil
		}
		b = b.Bucket([]byte(name))
	}
	return b
}

// Get returns the record stored under k (k.Model "" : the only model that
// has the rest of k): ErrNotFound if there is none, ErrBadRecord if it does
// not decode or fails its checksum.
func (db *DB) Get(k Key) (Record, error) {
	if err := k.Validate(); err != nil {
		return Record{}, err
	}
	var rec Record
	err := db.view(func(tx *bolt.Tx) error {
		if isOldLayout(tx) {
			return getOld(tx, k, &rec)
		}
		k, _, v, err := storedRecord(tx, k)
		if err != nil {
			return err
		}
		rec, err = decodeAt(k, v)
		return err
	})
	return rec, err
}

// storedRecord finds k's record (k.Model "" : the only model that has the
// rest of k): the resolved key, its format bucket and its stored value,
// or ErrNotFound.
func storedRecord(tx *bolt.Tx, k Key) (Key, *bolt.Bucket, []byte, error) {
	k, err := resolveModel(tx, k)
	if err != nil {
		return k, nil, nil, err
	}
	fb := recordBucket(tx, k)
	var v []byte
	if fb != nil {
		v = fb.Get([]byte(k.Shape().String()))
	}
	if v == nil {
		return k, nil, nil, fmt.Errorf("%s: %w", k, ErrNotFound)
	}
	return k, fb, v, nil
}

// getOld is Get on a file of the older layout.
func getOld(tx *bolt.Tx, k Key, rec *Record) error {
	recs, _ := readOldLayout(tx)
	var found []Record
	for _, r := range recs {
		if r.Arch == k.Arch && r.Format == k.Format && r.Rows == k.Rows && r.Cols == k.Cols && (k.Model == "" || r.Model == k.Model) {
			found = append(found, r)
		}
	}
	switch len(found) {
	case 0:
		return fmt.Errorf("%s: %w", k, ErrNotFound)
	case 1:
		*rec = found[0]
		return nil
	}
	return fmt.Errorf("%w %s: records of %d GPU models: name one", ErrBadKey, k, len(found))
}

// decodeAt checks and decodes the record stored under k and checks that it
// names k. A record of another schema takes its key from k.
func decodeAt(k Key, v []byte) (Record, error) {
	data, err := openValue(k, v)
	if err != nil {
		return Record{Key: k}, err
	}
	rec, err := DecodeRecord(data)
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

// walkRecords calls fn for every stored value under arch ("" = every
// arch) with the key its place gives, in storage order (arch, model,
// format, then shape as bytes); values are valid only during the call. A
// place that holds something other than what belongs there is passed as
// its key and an error matching ErrBadRecord.
func walkRecords(tx *bolt.Tx, arch string, fn func(k Key, v []byte, err error)) error {
	if isOldLayout(tx) { // a reader of a file no writer has rewritten yet
		recs, bad := readOldLayout(tx)
		for _, b := range bad {
			if arch == "" || b.Key.Arch == arch {
				fn(b.Key, nil, b.Err)
			}
		}
		for _, r := range recs {
			if data, err := r.Encode(); err == nil && (arch == "" || r.Arch == arch) {
				fn(r.Key, sealValue(data), nil)
			}
		}
		return nil
	}
	return tx.ForEach(func(name []byte, ab *bolt.Bucket) error {
		if len(name) > 0 && name[0] == '_' || arch != "" && string(name) != arch {
			return nil
		}
		return ab.ForEach(func(model, v []byte) error {
			mb := ab.Bucket(model)
			k := Key{Arch: string(name), Model: string(model)}
			if mb == nil {
				fn(k, nil, fmt.Errorf("%s/%s: %w: a value where a GPU model bucket belongs", name, model, ErrBadRecord))
				return nil
			}
			return mb.ForEach(func(format, v []byte) error {
				fb := mb.Bucket(format)
				k.Format = string(format)
				if fb == nil {
					fn(k, nil, fmt.Errorf("%s: %w: a value where a format bucket belongs", k.Arch+"/"+k.Model+"/"+k.Format, ErrBadRecord))
					return nil
				}
				return fb.ForEach(func(sk, v []byte) error {
					k := k
					sh, err := space.ParseShape(string(sk))
					if err != nil {
						fn(k, nil, fmt.Errorf("%s/%s/%s: %w: %w", name, model, format, ErrBadRecord, err))
						return nil
					}
					k.Rows, k.Cols = sh.Rows, sh.Cols
					if v == nil {
						fn(k, nil, fmt.Errorf("%s: %w: a bucket where a record belongs", k, ErrBadRecord))
						return nil
					}
					fn(k, v, nil)
					return nil
				})
			})
		})
	})
}

// readRecords decodes every record of tx; those that cannot be read are
// listed as bad.
func readRecords(tx *bolt.Tx) ([]Record, []BadEntry) {
	var recs []Record
	var bad []BadEntry
	_ = walkRecords(tx, "", func(k Key, v []byte, err error) {
		var rec Record
		if err == nil {
			rec, err = decodeAt(k, v)
		}
		if err != nil {
			bad = append(bad, BadEntry{Key: k, Err: err})
			return
		}
		recs = append(recs, rec)
	})
	return recs, bad
}

// Walk calls fn for every record of arch ("" = every arch), in storage
// order (arch, model, format, then shape key as bytes), after the read
// transaction has ended. A stored value that does not decode (or fails its
// checksum) is passed as a Record holding only its key and an error
// matching ErrBadRecord, so callers can skip or report it. An error from
// fn stops the walk and is returned.
func (db *DB) Walk(arch string, fn func(rec Record, err error) error) error {
	type item struct {
		rec Record
		err error
	}
	var items []item
	err := db.view(func(tx *bolt.Tx) error {
		return walkRecords(tx, arch, func(k Key, v []byte, err error) {
			rec := Record{Key: k}
			if err == nil {
				rec, err = decodeAt(k, v)
			}
			items = append(items, item{rec, err})
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

// All returns the records of arch ("" = every arch) sorted by arch, model,
// format, rows and cols. Records that do not decode are left out; the
// returned error then matches ErrBadRecord and names the first of them,
// and the good records are still returned.
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

// SortRecords sorts by arch, model, format, rows, then cols.
func SortRecords(recs []Record) {
	sort.Slice(recs, func(i, j int) bool { return keyLess(recs[i].Key, recs[j].Key) })
}

func keyLess(a, b Key) bool {
	switch {
	case a.Arch != b.Arch:
		return a.Arch < b.Arch
	case a.Model != b.Model:
		return a.Model < b.Model
	case a.Format != b.Format:
		return a.Format < b.Format
	case a.Rows != b.Rows:
		return a.Rows < b.Rows
	}
	return a.Cols < b.Cols
}

// Cubin returns the cubin stored under its sha256 hex hash
// (Record.CubinHash), checked against it: ErrBadRecord if the stored bytes
// no longer match.
func (db *DB) Cubin(hash string) ([]byte, error) {
	var out []byte
	err := db.view(func(tx *bolt.Tx) error {
		if cb := tx.Bucket(bucketCubin); cb != nil {
			out = bytes.Clone(cb.Get([]byte(hash)))
		}
		return nil
	})
	switch {
	case err != nil:
		return nil, err
	case out == nil:
		return nil, fmt.Errorf("cubin %s: %w", short(hash), ErrNotFound)
	case !hashIs(out, hash):
		return nil, fmt.Errorf("cubin %s: %w: its bytes no longer match their sha256 (the cache is damaged)", short(hash), ErrBadRecord)
	}
	return out, nil
}

// Amend changes the records under keys (k.Model "" : the only model that
// has the rest of k) by fn, all in one transaction: none changes unless
// all do. fn may change what a record says but not its key or the cubins
// it names (its winner's, its exact alternative's), which stay as
// stored; Put replaces a winner. ErrNotFound if a key has no record,
// ErrBadRecord if one does not decode, is of another schema or does not
// validate after fn.
func (db *DB) Amend(keys []Key, fn func(*Record)) error {
	for _, k := range keys {
		if err := k.Validate(); err != nil {
			return err
		}
	}
	return db.update(func(tx *bolt.Tx) error {
		ix := loadIndex(tx)
		for _, k := range keys {
			k, fb, v, err := storedRecord(tx, k)
			if err != nil {
				return err
			}
			rec, err := decodeAt(k, v)
			if err != nil {
				return err
			}
			if rec.Schema != SchemaVersion {
				return fmt.Errorf("%w %s: schema %d, this autotune amends %d", ErrBadRecord, k, rec.Schema, SchemaVersion)
			}
			fn(&rec)
			value, err := rec.seal()
			if err != nil {
				return err
			}
			if rec.Key != k || storedCubinHashes(k, value) != storedCubinHashes(k, v) {
				return fmt.Errorf("%w %s: an amendment may not change the key or the cubins", ErrBadRecord, k)
			}
			if err := fb.Put([]byte(k.Shape().String()), value); err != nil {
				return fmt.Errorf("storing %s: %w", k, err)
			}
			ix.set(rec.Summary())
		}
		return ix.save(tx)
	})
}

// Delete removes the record under k (k.Model "" : the only model that has
// the rest of k), and its cubin when no other record uses it, in one
// transaction. ErrNotFound if there is none.
func (db *DB) Delete(k Key) error {
	if err := k.Validate(); err != nil {
		return err
	}
	return db.update(func(tx *bolt.Tx) error {
		k, fb, v, err := storedRecord(tx, k)
		if err != nil {
			return err
		}
		hashes := storedCubinHashes(k, v)
		if err := fb.Delete([]byte(k.Shape().String())); err != nil {
			return err
		}
		ix := loadIndex(tx)
		ix.del(k)
		if err := ix.save(tx); err != nil {
			return err
		}
		if err := dropCubins(tx, hashes); err != nil {
			return err
		}
		return pruneEmpty(tx, k)
	})
}

// pruneEmpty deletes k's format, model and arch buckets once they are empty.
func pruneEmpty(tx *bolt.Tx, k Key) error {
	ab := tx.Bucket([]byte(k.Arch))
	mb := ab.Bucket([]byte(k.Model))
	if f, _ := mb.Bucket([]byte(k.Format)).Cursor().First(); f == nil {
		if err := mb.DeleteBucket([]byte(k.Format)); err != nil {
			return err
		}
	}
	if f, _ := mb.Cursor().First(); f == nil {
		if err := ab.DeleteBucket([]byte(k.Model)); err != nil {
			return err
		}
	}
	if f, _ := ab.Cursor().First(); f == nil {
		return tx.DeleteBucket([]byte(k.Arch))
	}
	return nil
}

// index is the summaries of every record while a write transaction
// changes them; save stores them as the index value.
type index struct {
	sums []Summary
	pos  map[Key]int
}

// loadIndex reads tx's summaries for writing: from the index value, or
// from the records when it is missing or damaged.
func loadIndex(tx *bolt.Tx) *index {
	t := loadTable(tx)
	ix := &index{sums: make([]Summary, t.Len()), pos: make(map[Key]int, t.Len())}
	for i := range ix.sums {
		ix.sums[i] = t.Summary(i)
		ix.pos[ix.sums[i].Key] = i
	}
	return ix
}

func (ix *index) set(s Summary) {
	if i, ok := ix.pos[s.Key]; ok {
		ix.sums[i] = s
		return
	}
	ix.pos[s.Key] = len(ix.sums)
	ix.sums = append(ix.sums, s)
}

func (ix *index) del(k Key) {
	i, ok := ix.pos[k]
	if !ok {
		return
	}
	last := len(ix.sums) - 1
	ix.sums[i] = ix.sums[last]
	ix.pos[ix.sums[i].Key] = i
	ix.sums = ix.sums[:last]
	delete(ix.pos, k)
}

func (ix *index) save(tx *bolt.Tx) error {
	m, err := tx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return err
	}
	if err := m.Put(keyIndex, encodeTable(ix.sums)); err != nil {
		return fmt.Errorf("writing index: %w", err)
	}
	return nil
}
