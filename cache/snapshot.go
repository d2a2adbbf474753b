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
		var raw []byte
		if m := tx.Bucket(bucketMeta); m != nil {
			raw = m.Get(keyIndex)
		}
		if err := s.readIndex(raw, intern, tx); err != nil {
			// Unreadable index: rebuild the summaries from the JSON records.
			s.Summaries, s.Bad = nil, nil
			ix, err := loadIndex(tx)
			if err != nil {
				return err
			}
			for _, e := range ix.entries {
				s.add(tx, e.key, e.sum, intern)
			}
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

// readIndex decodes the index blob (see index.go) straight into s.
func (s *Snapshot) readIndex(b []byte, intern func([]byte) string, tx *bolt.Tx) error {
	if len(b) == 0 {
		return nil
	}
	d := decoder{b: b}
	if d.u8() != indexVersion {
		return errIndex
	}
	n := int(d.u32())
	if d.err != nil || n > len(b) {
		return errIndex
	}
	s.Summaries = make([]Summary, 0, n)
	for i := 0; i < n; i++ {
		k := d.bytes(int(d.u16()))
		v := d.bytes(int(d.u32()))
		if d.err != nil {
			return errIndex
		}
		s.add(tx, string(k), v, intern)
	}
	if len(d.b) != 0 {
		return errIndex
	}
	return nil
}

// add decodes one index entry, falling back to the JSON record.
func (s *Snapshot) add(tx *bolt.Tx, key string, v []byte, intern func([]byte) string) {
	k, err := parseIndexKey(key)
	if err != nil {
		s.Bad = append(s.Bad, BadEntry{Key: k, Err: err})
		return
	}
	sum, err := decodeSummary(v, intern)
	if err != nil {
		sum, err = summaryFromRecord(tx, k)
	}
	if err != nil {
		s.Bad = append(s.Bad, BadEntry{Key: k, Err: err})
		return
	}
	sum.Key = k
	s.Summaries = append(s.Summaries, sum)
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
