package cache

import (
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// The index is one value (bucket _meta, key "index") holding the summary of
// every record, so that an engine's start-up reads one contiguous blob
// instead of walking thousands of keys. It is written as version 2, 3 or
// 4 (a Table; see table.go) when every summary fits a record, else as
// version 1, little-endian:
//
//	u8 version (1), u32 count, then count times:
//	u16 key length, key ("sm_90/q4_0/4096x14336"), u32 summary length, summary
//
// Every Put, Delete and Import rewrites it in the same transaction as the
// records. If it is ever unreadable, readers rebuild summaries from the
// JSON records (slower, still correct) and the next write rebuilds it.
var keyIndex = []byte("index")

const indexVersion = 1

var errIndex = errors.New("index unreadable")

type indexEntry struct {
	key string
	sum []byte
}

// index is the decoded index, in key order of insertion.
type index struct {
	entries []indexEntry
	pos     map[string]int
}

// parseIndex decodes an index value (version 1: sums alias b; versions 2
// to 4: each summary is encoded anew).
func parseIndex(b []byte) (*index, error) {
	ix := &index{pos: map[string]int{}}
	if len(b) == 0 {
		return ix, nil
	}
	if t, ok := parseTable(b); ok {
		ix.entries = make([]indexEntry, 0, t.Len())
		for i := 0; i < t.Len(); i++ {
			s := t.Summary(i)
			ix.set(s.Key.String(), encodeSummary(s))
		}
		return ix, nil
	}
	d := decoder{b: b}
	if d.u8() != indexVersion {
		return nil, errIndex
	}
	n := int(d.u32())
	if d.err != nil || n > len(b) {
		return nil, errIndex
	}
	ix.entries = make([]indexEntry, 0, n)
	for i := 0; i < n; i++ {
		k := d.bytes(int(d.u16()))
		s := d.bytes(int(d.u32()))
		if d.err != nil {
			return nil, errIndex
		}
		ix.pos[string(k)] = len(ix.entries)
		ix.entries = append(ix.entries, indexEntry{string(k), s})
	}
	if len(d.b) != 0 {
		return nil, errIndex
	}
	return ix, nil
}

// loadIndex reads the index for writing; an unreadable one is rebuilt from
// the records.
func loadIndex(tx *bolt.Tx) (*index, error) {
	m := tx.Bucket(bucketMeta)
	if m == nil {
		return &index{pos: map[string]int{}}, nil
	}
	if ix, err := parseIndex(m.Get(keyIndex)); err == nil {
		return ix, nil
	}
	ix := &index{pos: map[string]int{}}
	err := forEachRecord(tx, "", func(k Key, v []byte) {
		var sum []byte // empty: readers fall back to the record and report it
		if rec, err := decodeAt(k, v); err == nil {
			sum = encodeSummary(rec.Summary())
		}
		ix.set(k.String(), sum)
	})
	return ix, err
}

func (ix *index) set(key string, sum []byte) {
	if i, ok := ix.pos[key]; ok {
		ix.entries[i].sum = sum
		return
	}
	ix.pos[key] = len(ix.entries)
	ix.entries = append(ix.entries, indexEntry{key, sum})
}

func (ix *index) del(key string) {
	i, ok := ix.pos[key]
	if !ok {
		return
	}
	last := len(ix.entries) - 1
	ix.entries[i] = ix.entries[last]
	ix.pos[ix.entries[i].key] = i
	ix.entries = ix.entries[:last]
	delete(ix.pos, key)
}

// save writes the index: as a Table (version 2, 3 or 4) if every entry
// fits one, else as version 1.
func (ix *index) save(tx *bolt.Tx) error {
	b, ok := ix.table()
	if !ok {
		b = ix.encodeV1()
	}
	m, err := tx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return err
	}
	if err := m.Put(keyIndex, b); err != nil {
		return fmt.Errorf("writing index: %w", err)
	}
	return nil
}

// table encodes the index as a Table; false if an entry does not parse,
// decode or fit a record.
func (ix *index) table() ([]byte, bool) {
	tb := newTableBuilder(len(ix.entries))
	var s rawSummary
	var nk keyNames
	for _, e := range ix.entries {
		if !parseKeyInto(&nk, &s, []byte(e.key)) || s.Key().String() != e.key || decodeRaw(e.sum, &s) != nil {
			return nil, false
		}
		tb.add(&s)
	}
	return tb.finish().encode()
}

func (ix *index) encodeV1() []byte {
	size := 5
	for _, e := range ix.entries {
		size += 6 + len(e.key) + len(e.sum)
	}
	b := make([]byte, 0, size)
	b = append(b, indexVersion)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(ix.entries)))
	for _, e := range ix.entries {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(e.key)))
		b = append(b, e.key...)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(e.sum)))
		b = append(b, e.sum...)
	}
	return b
}

// forEachRecord calls fn for every stored record value of arch ("" = all)
// whose key parses; values are valid only during the call.
func forEachRecord(tx *bolt.Tx, arch string, fn func(k Key, v []byte)) error {
	return tx.ForEach(func(name []byte, ab *bolt.Bucket) error {
		if len(name) > 0 && name[0] == '_' || arch != "" && string(name) != arch {
			return nil
		}
		return ab.ForEach(func(format, _ []byte) error {
			fb := ab.Bucket(format)
			if fb == nil {
				return nil
			}
			return fb.ForEach(func(sk, v []byte) error {
				k, err := parseIndexKey(string(name) + "/" + string(format) + "/" + string(sk))
				if err == nil && v != nil {
					fn(k, v)
				}
				return nil
			})
		})
	})
}
