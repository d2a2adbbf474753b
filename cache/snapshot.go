package cache

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Snapshot is everything an engine needs from the cache, read in one
// transaction: the summary of every record and the cubins they use.
type Snapshot struct {
	Summaries []Summary
	Cubins    map[string][]byte // sha256 hex → cubin; only those summaries use
	Bad       []BadEntry        // entries that could not be read
}

// BadEntry is an entry Snapshot could not read; Key holds what the entry's
// name gives (possibly nothing).
type BadEntry struct {
	Key Key
	Err error
}

// Snapshot reads every summary (and, with cubins, the cubins they use). A
// summary that does not decode is rebuilt from its JSON record; if that
// fails too, the entry is listed in Bad.
func (db *DB) Snapshot(cubins bool) (*Snapshot, error) {
	s := &Snapshot{Cubins: map[string][]byte{}}
	strs := map[string]string{}
	intern := func(b []byte) string {
		if v, ok := strs[string(b)]; ok {
			return v
		}
		v := string(b)
		strs[v] = v
		return v
	}
	err := db.view(func(tx *bolt.Tx) error {
		ib := tx.Bucket(bucketIndex)
		if ib == nil {
			return nil
		}
		c := ib.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			key, err := parseIndexKey(string(k))
			if err != nil {
				s.Bad = append(s.Bad, BadEntry{Key: key, Err: err})
				continue
			}
			sum, err := decodeSummary(v, intern)
			if err != nil {
				sum, err = summaryFromRecord(tx, key)
			}
			if err != nil {
				s.Bad = append(s.Bad, BadEntry{Key: key, Err: err})
				continue
			}
			sum.Key = key
			s.Summaries = append(s.Summaries, sum)
		}
		if !cubins {
			return nil
		}
		cb := tx.Bucket(bucketCubin)
		if cb == nil {
			return nil
		}
		for _, sum := range s.Summaries {
			if sum.CubinHash == "" || s.Cubins[sum.CubinHash] != nil {
				continue
			}
			if b := cb.Get([]byte(sum.CubinHash)); b != nil {
				s.Cubins[sum.CubinHash] = bytes.Clone(b)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

func summaryFromRecord(tx *bolt.Tx, k Key) (Summary, error) {
	fb := recordBucket(tx, k)
	if fb == nil {
		return Summary{}, fmt.Errorf("%s: %w: indexed but not stored", k, ErrBadRecord)
	}
	v := fb.Get([]byte(k.Shape().String()))
	if v == nil {
		return Summary{}, fmt.Errorf("%s: %w: indexed but not stored", k, ErrBadRecord)
	}
	rec, err := decodeAt(k, v)
	if err != nil {
		return Summary{}, err
	}
	return rec.Summary(), nil
}
