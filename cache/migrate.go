package cache

import (
	"fmt"
	"strconv"

	"github.com/gemvtune/gemvtune/space"
	bolt "go.etcd.io/bbolt"
)

// isOldLayout reports whether tx's file has oldFileVersion's layout.
func isOldLayout(tx *bolt.Tx) bool {
	m := tx.Bucket(bucketMeta)
	return m != nil && string(m.Get(keyLayout)) == strconv.Itoa(oldFileVersion)
}

// readOldLayout reads the records of a file of oldFileVersion (arch →
// format → shape → record JSON, no checksum, no GPU model), each as this
// schema's record of the model its GPU name gives (upgrade). Entries that
// cannot be read are listed as bad.
func readOldLayout(tx *bolt.Tx) ([]Record, []BadEntry) {
	var recs []Record
	var bad []BadEntry
	_ = tx.ForEach(func(name []byte, ab *bolt.Bucket) error {
		if len(name) > 0 && name[0] == '_' {
			return nil
		}
		return ab.ForEach(func(format, _ []byte) error {
			fb := ab.Bucket(format)
			if fb == nil {
				return nil
			}
			return fb.ForEach(func(sk, v []byte) error {
				k := Key{Arch: string(name), Format: string(format)}
				sh, err := space.ParseShape(string(sk))
				if err == nil {
					k.Rows, k.Cols = sh.Rows, sh.Cols
				}
				var rec Record
				if err == nil && v != nil {
					rec, err = upgrade(k, v)
				} else if err == nil {
					err = fmt.Errorf("%w: a bucket where a record belongs", ErrBadRecord)
				}
				if err != nil {
					bad = append(bad, BadEntry{Key: k, Err: fmt.Errorf("%s: %w", k, err)})
					return nil
				}
				recs = append(recs, rec)
				return nil
			})
		})
	})
	return recs, bad
}

// upgrade decodes a record of schema 1 (JSON without a GPU model) stored
// under k and returns it as a record of SchemaVersion.
func upgrade(k Key, data []byte) (Record, error) {
	rec, err := DecodeRecord(data)
	if err != nil {
		return Record{}, err
	}
	if rec.Schema != 1 && rec.Schema != SchemaVersion {
		return Record{}, fmt.Errorf("%w: schema %d", ErrBadRecord, rec.Schema)
	}
	rec.Schema = SchemaVersion
	rec.Arch, rec.Format, rec.Rows, rec.Cols = k.Arch, k.Format, k.Rows, k.Cols
	if rec.Model == "" {
		rec.Model = NormalizeModel(rec.GPUName)
	}
	if err := rec.Validate(); err != nil {
		return Record{}, err
	}
	return rec, nil
}

// migrate rewrites a file of oldFileVersion in the current layout, in the
// writer's transaction (so a crash leaves the old file as it was): every
// readable record under its GPU model with its checksum, a new index, the
// cubins' reference counts recounted and unused cubins dropped. It says
// what it did in words.
func migrate(tx *bolt.Tx) (string, error) {
	recs, bad := readOldLayout(tx)
	var archs [][]byte
	_ = tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
		if len(name) == 0 || name[0] != '_' {
			archs = append(archs, append([]byte(nil), name...))
		}
		return nil
	})
	for _, a := range archs {
		if err := tx.DeleteBucket(a); err != nil {
			return "", err
		}
	}
	ix := &index{pos: map[Key]int{}}
	refs := map[string]int{}
	for _, rec := range recs {
		data, err := rec.Encode()
		if err != nil {
			return "", err
		}
		fb, err := createRecordBucket(tx, rec.Key)
		if err != nil {
			return "", err
		}
		if err := fb.Put([]byte(rec.Shape().String()), sealValue(data)); err != nil {
			return "", err
		}
		ix.set(rec.Summary())
		refs[rec.CubinHash]++
		if rec.Exact != nil {
			refs[rec.Exact.CubinHash]++
		}
	}
	if err := recount(tx, refs); err != nil {
		return "", err
	}
	m := tx.Bucket(bucketMeta)
	if err := m.Put(keyLayout, []byte(strconv.Itoa(FileVersion))); err != nil {
		return "", err
	}
	if err := ix.save(tx); err != nil {
		return "", err
	}
	msg := fmt.Sprintf("rebuilt from its %d records", len(recs))
	if len(bad) > 0 {
		msg += fmt.Sprintf("; %d unreadable entries dropped, first: %v", len(bad), bad[0].Err)
	}
	return msg, nil
}

// recount sets the cubins' reference counts to refs (hash → records using
// it) and deletes the cubins no record uses.
func recount(tx *bolt.Tx, refs map[string]int) error {
	cb, err := tx.CreateBucketIfNotExists(bucketCubin)
	if err != nil {
		return err
	}
	_ = tx.DeleteBucket(bucketRefs)
	rb, err := tx.CreateBucket(bucketRefs)
	if err != nil {
		return err
	}
	var unused [][]byte
	_ = cb.ForEach(func(h, _ []byte) error {
		if refs[string(h)] == 0 {
			unused = append(unused, append([]byte(nil), h...))
		}
		return nil
	})
	for _, h := range unused {
		if err := cb.Delete(h); err != nil {
			return err
		}
	}
	for h, n := range refs {
		if h == "" || cb.Get([]byte(h)) == nil {
			continue
		}
		if err := rb.Put([]byte(h), []byte(strconv.Itoa(n))); err != nil {
			return err
		}
	}
	return nil
}
