package cache

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ExportKind is the "kind" field of an export file.
const ExportKind = "gemvtune-cache-export"

// ExportVersion is the version of the export form this package writes
// (docs/cache.md describes it field by field). ReadExport also reads
// version 1, whose records (schema 1) have no GPU model: Import takes it
// from each record's GPU name.
const ExportVersion = 2

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
// that do not decode, fail their checksum, or whose cubin no longer
// matches its sha256 are left out and reported by the error (matching
// ErrBadRecord) beside the export.
func (db *DB) Export(arch string) (*Export, error) {
	recs, badErr := db.All(arch)
	if recs == nil && badErr != nil && !errors.Is(badErr, ErrBadRecord) {
		return nil, badErr
	}
	e := &Export{Kind: ExportKind, Version: ExportVersion, ToolVersion: ToolVersion,
		Exported: time.Now().UTC(), Records: []Record{}, Cubins: map[string][]byte{}}
	var damaged []error
	err := db.view(func(tx *bolt.Tx) error {
		cb := tx.Bucket(bucketCubin)
		// cubin returns the checked cubin of hash ("" : none, fine).
		cubin := func(h string) ([]byte, bool) {
			if h == "" {
				return nil, true
			}
			if b, ok := e.Cubins[h]; ok {
				return b, true
			}
			var b []byte
			if cb != nil {
				b = cb.Get([]byte(h))
			}
			if b == nil || !hashIs(b, h) {
				return nil, false
			}
			e.Cubins[h] = bytes.Clone(b)
			return e.Cubins[h], true
		}
		for _, r := range recs {
			_, ok := cubin(r.CubinHash)
			if ok && r.Exact != nil {
				_, ok = cubin(r.Exact.CubinHash)
			}
			if !ok {
				damaged = append(damaged, fmt.Errorf("%s: %w: its cubin is missing or no longer matches its sha256", r.Key, ErrBadRecord))
				continue
			}
			e.Records = append(e.Records, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(damaged) > 0 {
		badErr = errors.Join(append([]error{badErr}, damaged...)...)
	}
	return e, badErr
}

// WriteJSON writes e as indented JSON.
func (e *Export) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(e)
}

// ReadExport reads one export (what Export wrote, version 1 or 2) and
// nothing after it: trailing bytes, a second export included, are an
// error. It checks the kind and version; records are checked one by one
// by Import. The caller bounds what r may deliver.
func ReadExport(r io.Reader) (*Export, error) {
	var e Export
	dec := json.NewDecoder(r)
	if err := dec.Decode(&e); err != nil {
		return nil, fmt.Errorf("reading export: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("reading export: more data after the export's closing brace (one export per file)")
	}
	if e.Kind != ExportKind {
		return nil, fmt.Errorf("reading export: kind %q, want %q", e.Kind, ExportKind)
	}
	if e.Version != ExportVersion && e.Version != 1 {
		return nil, fmt.Errorf("reading export: version %d, this autotune reads 1 and %d", e.Version, ExportVersion)
	}
	return &e, nil
}

// maxClockSkew is how far into the future an imported record's time may
// lie: later times would win every merge after them.
const maxClockSkew = 24 * time.Hour

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
// new key (arch, GPU model, format, shape) is added; if the key exists and
// was measured on a GPU of the same name, the newer measurement (by Time)
// stays; a different GPU name is a conflict and the cache keeps its own.
// Records that do not validate, are of another schema, lie more than a day
// in the future, or whose cubin does not match its hash are skipped;
// schema 1 records (export version 1) get their GPU model from their GPU
// name.
func (db *DB) Import(e *Export) (ImportSummary, error) {
	var s ImportSummary
	type prepared struct {
		rec               Record
		value             []byte
		cubin, exactCubin []byte
	}
	var todo []prepared
	for _, r := range e.Records {
		if r.Schema == 1 {
			r.Schema = SchemaVersion
			if r.Model == "" {
				r.Model = NormalizeModel(r.GPUName)
			}
		}
		if r.Schema != SchemaVersion {
			s.Skipped = append(s.Skipped, fmt.Sprintf("%s: schema %d, this autotune reads %d", r.Key, r.Schema, SchemaVersion))
			continue
		}
		if r.Time.After(time.Now().Add(maxClockSkew)) {
			s.Skipped = append(s.Skipped, fmt.Sprintf("%s: time %s lies in the future", r.Key, r.Time.Format(time.RFC3339)))
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
		value, err := prepare(&r, cubin, exactCubin)
		if err != nil {
			s.Skipped = append(s.Skipped, err.Error())
			continue
		}
		todo = append(todo, prepared{r, value, cubin, exactCubin})
	}
	err := db.update(func(tx *bolt.Tx) error {
		ix := loadIndex(tx)
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
			if err := putTx(tx, ix, p.rec, p.value, p.cubin, p.exactCubin); err != nil {
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
