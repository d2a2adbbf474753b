package cache

import (
	"bytes"

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
// fails too, the entry is listed in Bad. Engines use ReadTable instead,
// which copies less.
func (db *DB) Snapshot(cubins bool) (*Snapshot, error) {
	s := &Snapshot{Cubins: map[string][]byte{}}
	err := db.view(func(tx *bolt.Tx) error {
		t := loadTable(tx)
		if isOldLayout(tx) {
			t = tableOf(readOldLayout(tx))
		}
		s.Summaries = make([]Summary, t.Len())
		for i := range s.Summaries {
			s.Summaries[i] = t.Summary(i)
		}
		s.Bad = t.Bad()
		if !cubins {
			return nil
		}
		cb := tx.Bucket(bucketCubin)
		if cb == nil {
			return nil
		}
		for _, sum := range s.Summaries {
			for _, h := range [...]string{sum.CubinHash, sum.Exact.CubinHash} {
				if h == "" || s.Cubins[h] != nil {
					continue
				}
				if b := cb.Get([]byte(h)); b != nil {
					s.Cubins[h] = bytes.Clone(b)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}
