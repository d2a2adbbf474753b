package cache

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ExportKind is the "kind" field of an export file.
const ExportKind = "gemvtune-cache-export"

// ExportVersion is the version of the export form this package writes and
// reads (docs/cache.md describes it field by field).
const ExportVersion = 1

// Export is the portable JSON form of a cache: for fleets, and for engines
// not written in Go. Cubins are base64 in JSON.
type Export struct {
	Kind        string            `json:"kind"`    // ExportKind
	Version     int               `json:"version"` // ExportVersion
	ToolVersion string            `json:"tool_version"`
	Exported    time.Time         `json:"exported"`
	Records     []Record          `json:"records"`
	Cubins      map[string][]byte `json:"cubins"` // sha256 hex → cubin
}

// Export returns the records of arch ("" = all) and their cubins. Records
// that do not decode are left out and reported by the error (matching
// ErrBadRecord) beside the export.
func (db *DB) Export(arch string) (*Export, error) {
	recs, badErr := db.All(arch)
	if recs == nil && badErr != nil && !errors.Is(badErr, ErrBadRecord) {
		return nil, badErr
	}
	e := &Export{Kind: ExportKind, Version: ExportVersion, ToolVersion: ToolVersion,
		Exported: time.Now().UTC(), Records: recs, Cubins: map[string][]byte{}}
	if e.Records == nil {
		e.Records = []Record{}
	}
	err := db.view(func(tx *bolt.Tx) error {
		cb := tx.Bucket(bucketCubin)
		if cb == nil {
			return nil
		}
		add := func(h string) {
			if h == "" || e.Cubins[h] != nil {
				return
			}
			if b := cb.Get([]byte(h)); b != nil {
				e.Cubins[h] = append([]byte(nil), b...)
			}
		}
		for _, r := range recs {
			add(r.CubinHash)
			if r.Exact != nil {
				add(r.Exact.CubinHash)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return e, badErr
}

// WriteJSON writes e as indented JSON.
func (e *Export) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(e)
}

// ReadExport reads an export file. It checks the kind and version; records
// are checked one by one by Import.
func ReadExport(r io.Reader) (*Export, error) {
	var e Export
	dec := json.NewDecoder(r)
	if err := dec.Decode(&e); err != nil {
		return nil, fmt.Errorf("reading export: %w", err)
	}
	if e.Kind != ExportKind {
		return nil, fmt.Errorf("reading export: kind %q, want %q", e.Kind, ExportKind)
	}
	if e.Version != ExportVersion {
		return nil, fmt.Errorf("reading export: version %d, this autotune reads %d", e.Version, ExportVersion)
	}
	return &e, nil
}

// ImportSummary says what Import did with each record.
type ImportSummary struct {
	Added     int        // new keys
	Replaced  int        // newer measurements of the same GPU name
	Kept      int        // ours was as new or newer
	Conflicts []Conflict // another GPU name holds the key: not overwritten
	Skipped   []string   // records refused, one line each
}

// Conflict is a key that both sides tuned on differently named GPUs.
type Conflict struct {
	Key    Key
	Ours   string // GPU name in the cache
	Theirs string // GPU name in the import
}

// String returns one line, e.g. "2 added, 1 replaced, 0 kept, 1 conflict, 0 skipped".
func (s ImportSummary) String() string {
	return fmt.Sprintf("%d added, %d replaced, %d kept, %d conflicts, %d skipped",
		s.Added, s.Replaced, s.Kept, len(s.Conflicts), len(s.Skipped))
}

// Import merges e into the cache in one transaction. For each record: a
// new key is added; if the key exists and was measured on a GPU of the same
// name, the newer measurement (by Time) stays; a different GPU name is a
// conflict and the cache keeps its own. Records that do not validate, are
// of another schema, or whose cubin does not match its hash are skipped.
func (db *DB) Import(e *Export) (ImportSummary, error) {
	var s ImportSummary
	type prepared struct {
		rec               Record
		data, sum         []byte
		cubin, exactCubin []byte
	}
	var todo []prepared
	for _, r := range e.Records {
		if r.Schema != SchemaVersion {
			s.Skipped = append(s.Skipped, fmt.Sprintf("%s: schema %d, this autotune reads %d", r.Key, r.Schema, SchemaVersion))
			continue
		}
		cubin, why := exportCubin(e, r.Key, "", r.CubinHash)
		if why != "" {
			s.Skipped = append(s.Skipped, why)
			continue
		}
		var exactCubin []byte
		if r.Exact != nil {
			if exactCubin, why = exportCubin(e, r.Key, "exact alternative's ", r.Exact.CubinHash); why != "" {
				s.Skipped = append(s.Skipped, why)
				continue
			}
		}
		if r.Time.IsZero() {
			s.Skipped = append(s.Skipped, fmt.Sprintf("%s: no time", r.Key))
			continue
		}
		data, sum, err := prepare(&r, cubin, exactCubin)
		if err != nil {
			s.Skipped = append(s.Skipped, err.Error())
			continue
		}
		todo = append(todo, prepared{r, data, sum, cubin, exactCubin})
	}
	err := db.update(func(tx *bolt.Tx) error {
		ix, err := loadIndex(tx)
		if err != nil {
			return err
		}
		for _, p := range todo {
			var old Record
			var oldErr error
			exists := false
			if fb := recordBucket(tx, p.rec.Key); fb != nil {
				if v := fb.Get([]byte(p.rec.Shape().String())); v != nil {
					exists = true
					old, oldErr = decodeAt(p.rec.Key, v)
				}
			}
			switch {
			case !exists:
				s.Added++
			case oldErr == nil && old.GPUName != p.rec.GPUName:
				s.Conflicts = append(s.Conflicts, Conflict{Key: p.rec.Key, Ours: old.GPUName, Theirs: p.rec.GPUName})
				continue
			case oldErr == nil && !p.rec.Time.After(old.Time):
				s.Kept++
				continue
			default:
				s.Replaced++
			}
			if err := putTx(tx, ix, p.rec, p.data, p.sum, p.cubin, p.exactCubin); err != nil {
				return err
			}
		}
		return ix.save(tx)
	})
	if err != nil {
		return ImportSummary{}, err
	}
	return s, nil
}

// exportCubin returns the cubin of e stored under hash ("" : none), or why
// the record key must be skipped; what names the cubin in that line.
func exportCubin(e *Export, k Key, what, hash string) (cubin []byte, why string) {
	if hash == "" {
		return nil, ""
	}
	cubin = e.Cubins[hash]
	if cubin == nil {
		return nil, fmt.Sprintf("%s: %scubin %s missing from the export", k, what, short(hash))
	}
	if CubinHash(cubin) != hash {
		return nil, fmt.Sprintf("%s: %scubin does not match its hash %s", k, what, short(hash))
	}
	return cubin, ""
}
