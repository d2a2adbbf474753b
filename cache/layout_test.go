package cache

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemvtune/gemvtune/space"
	bolt "go.etcd.io/bbolt"
)

func testRecord(rng *rand.Rand, arch, gpu, format string, rows, cols int) Record {
	p := space.Params{R: 1 + rng.IntN(4), F: []int{0, 2, 4}[rng.IntN(3)], U: []int{1, 2, 4}[rng.IntN(3)], S: rng.IntN(4),
		W: []int{4, 8, 16}[rng.IntN(3)], G: []int{0, 7, 14}[rng.IntN(3)], L: rng.IntN(3), A: rng.IntN(2)}
	r := Record{
		Key: Key{Arch: arch, Format: format, Rows: rows, Cols: cols}, WinnerID: p.ID(), Params: p, Layout: p.L, Class: ClassTolerance, Schema: SchemaVersion,
		Decision: p.ID() + fmt.Sprintf(": +%.1f %% over v1", 10*rng.Float64()), MedianUS: 1 + rng.Float64(),
		GBs: 4000 * rng.Float64(), PctCeiling: 90 * rng.Float64(), Speedup: 1 + rng.Float64(), P: rng.Float64() / 100,
		PDLUS: rng.Float64(), PDLShared: rng.IntN(1 << 17), LaunchPDL: rng.IntN(2) == 0, GPUName: gpu, SourceHash: "0123abcd", ToolVersion: ToolVersion,
		Time: time.Date(2026, 11, 1+rng.IntN(28), 1, 2, 3, rng.IntN(1e9), time.UTC), Throttled: rng.IntN(2) == 0,
	}
	if rng.IntN(2) == 0 {
		r.Exact = &Alternative{WinnerID: "r2f0u1s0w8", Params: space.Params{R: 2, U: 1, W: 8}, Class: ClassExact,
			Decision: "r2f0u1s0w8: +3.0 % over v1", MedianUS: 2, GBs: 3000, PctCeiling: 70, Speedup: 1.03, P: 0.01}
	}
	return r
}

func writeRecords(t *testing.T, n int) (string, []Record) {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, uint64(n)))
	path := filepath.Join(t.TempDir(), "tune.db")
	db, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var recs []Record
	for i := 0; i < n; i++ {
		gpu := []string{"NVIDIA H200", "NVIDIA H100 80GB HBM3", "NVIDIA H20"}[i%3]
		r := testRecord(rng, []string{"sm_90", "sm_80"}[i%2], gpu, []string{"q4_0", "q4_K", "bf16"}[i%3], 1024*(1+i), 4096)
		if err := db.Put(r, []byte(fmt.Sprintf("cubin %d", i))); err != nil {
			t.Fatal(err)
		}
		got, err := db.Get(Key{Arch: r.Arch, Model: NormalizeModel(gpu), Format: r.Format, Rows: r.Rows, Cols: r.Cols})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, got)
	}
	return path, recs
}

// TestIndexRoundTrip: every summary the index gives is the record's own.
func TestIndexRoundTrip(t *testing.T) {
	path, recs := writeRecords(t, 40)
	tab, err := ReadTable(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tab.Len() != len(recs) || len(tab.Bad()) != 0 || tab.Notice() != "" {
		t.Fatalf("table of %d, bad %v, notice %q; want %d records", tab.Len(), tab.Bad(), tab.Notice(), len(recs))
	}
	want := map[Key]Summary{}
	for _, r := range recs {
		want[r.Key] = r.Summary()
	}
	for i := 0; i < tab.Len(); i++ {
		s := tab.Summary(i)
		if !reflect.DeepEqual(s, want[s.Key]) {
			t.Errorf("summary %d:\n got %+v\nwant %+v", i, s, want[s.Key])
		}
		if a, m, f := tab.Group(i); a != s.Arch || m != s.Model || f != s.Format {
			t.Errorf("group %d = %s %s %s", i, a, m, f)
		}
		if _, ok := tab.Cubin(s.CubinHash); !ok {
			t.Errorf("%s: cubin not located", s.Key)
		}
	}
}

// flipByte changes one byte of the value under bucket/key in the file.
func flipByte(t *testing.T, path string, buckets [][]byte, key []byte, at func(n int) int) {
	t.Helper()
	bdb, err := bolt.Open(path, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	err = bdb.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(buckets[0])
		for _, name := range buckets[1:] {
			b = b.Bucket(name)
		}
		v := bytes.Clone(b.Get(key))
		i := at(len(v))
		v[i] ^= 1 << (i % 8)
		return b.Put(key, v)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestIndexFlipsAreCaught: any single-byte flip in the index is caught by
// its checksum, and the summaries are rebuilt from the records, equal to
// the undamaged ones.
func TestIndexFlipsAreCaught(t *testing.T) {
	path, recs := writeRecords(t, 12)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	good, _ := ReadTable(path, nil)
	want := map[Key]Summary{}
	for i := 0; i < good.Len(); i++ {
		want[good.Key(i)] = good.Summary(i)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	for trial := 0; trial < 60; trial++ {
		if err := os.WriteFile(path, orig, 0o644); err != nil {
			t.Fatal(err)
		}
		flipByte(t, path, [][]byte{bucketMeta}, keyIndex, func(n int) int { return rng.IntN(n) })
		tab, err := ReadTable(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tab.Len() != len(recs) {
			t.Fatalf("trial %d: %d summaries, want %d", trial, tab.Len(), len(recs))
		}
		for i := 0; i < tab.Len(); i++ {
			if s := tab.Summary(i); !reflect.DeepEqual(s, want[s.Key]) {
				t.Fatalf("trial %d: summary of %s changed by a flip in the index:\n got %+v\nwant %+v", trial, s.Key, s, want[s.Key])
			}
		}
	}
}

// TestRecordFlipIsThatEntrysCorruption: a flip in one stored record makes
// that entry unreadable (Bad, left out of an export) and nothing else.
func TestRecordFlipIsThatEntrysCorruption(t *testing.T) {
	path, recs := writeRecords(t, 6)
	victim := recs[2].Key
	// Damage the record and the index, so readers must go to the records.
	flipByte(t, path, [][]byte{[]byte(victim.Arch), []byte(victim.Model), []byte(victim.Format)},
		[]byte(victim.Shape().String()), func(n int) int { return n / 2 })
	flipByte(t, path, [][]byte{bucketMeta}, keyIndex, func(n int) int { return 9 })
	tab, err := ReadTable(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tab.Len() != len(recs)-1 || len(tab.Bad()) != 1 || tab.Bad()[0].Key != victim ||
		!strings.Contains(tab.Bad()[0].Err.Error(), "checksum") {
		t.Fatalf("table: %d summaries, bad %v; want %d and %s bad", tab.Len(), tab.Bad(), len(recs)-1, victim)
	}
	db, err := Open(path, &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	e, err := db.Export("")
	if !errors.Is(err, ErrBadRecord) || len(e.Records) != len(recs)-1 {
		t.Errorf("export: %d records, %v; want %d and ErrBadRecord", len(e.Records), err, len(recs)-1)
	}
	if _, err := db.Get(victim); !errors.Is(err, ErrBadRecord) {
		t.Errorf("Get of the damaged record: %v", err)
	}
}

// TestDamagedCubinLeftOutOfExport: a cubin whose bytes no longer match its
// hash is not exported, and its record is reported.
func TestDamagedCubinLeftOutOfExport(t *testing.T) {
	path, recs := writeRecords(t, 3)
	flipByte(t, path, [][]byte{bucketCubin}, []byte(recs[1].CubinHash), func(n int) int { return 0 })
	db, err := Open(path, &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	e, err := db.Export("")
	if !errors.Is(err, ErrBadRecord) || len(e.Records) != 2 || e.Cubins[recs[1].CubinHash] != nil {
		t.Errorf("export: %d records, cubin kept %v, %v", len(e.Records), e.Cubins[recs[1].CubinHash] != nil, err)
	}
	if _, err := db.Cubin(recs[1].CubinHash); !errors.Is(err, ErrBadRecord) {
		t.Errorf("Cubin of damaged bytes: %v", err)
	}
}

// writeOldLayout writes recs as a file of oldFileVersion: arch → format →
// shape → JSON without checksum or model, schema 1.
func writeOldLayout(t *testing.T, recs []Record, cubins map[string][]byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "old.db")
	bdb, err := bolt.Open(path, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	err = bdb.Update(func(tx *bolt.Tx) error {
		m, _ := tx.CreateBucket(bucketMeta)
		m.Put(keyLayout, []byte("1"))
		m.Put(keyIndex, []byte{2, 0, 0, 0, 0}) // an old index form: ignored
		cb, _ := tx.CreateBucket(bucketCubin)
		rb, _ := tx.CreateBucket(bucketRefs)
		for h, c := range cubins {
			cb.Put([]byte(h), c)
			rb.Put([]byte(h), []byte("7")) // wrong counts: recounted
		}
		for _, r := range recs {
			ab, _ := tx.CreateBucketIfNotExists([]byte(r.Arch))
			fb, _ := ab.CreateBucketIfNotExists([]byte(r.Format))
			r.Schema, r.Model = 1, ""
			data, _ := json.Marshal(r)
			fb.Put([]byte(r.Shape().String()), data)
		}
		ab, _ := tx.CreateBucketIfNotExists([]byte("sm_90"))
		fb, _ := ab.CreateBucketIfNotExists([]byte("q8_0"))
		return fb.Put([]byte("64x64"), []byte("{not json"))
	})
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// TestOldLayout: a reader reads a file of the older layout from its
// records (with a notice), and the first writer rewrites it in one
// transaction, each record under the GPU model of its name.
func TestOldLayout(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	var recs []Record
	cubins := map[string][]byte{"deadbeef": []byte("orphan")}
	for i, gpu := range []string{"NVIDIA H200", "NVIDIA H20", "NVIDIA A100-SXM4-80GB"} {
		r := testRecord(rng, "sm_90", gpu, "q4_0", 4096*(i+1), 4096)
		c := []byte("cubin " + gpu)
		r.CubinHash = CubinHash(c)
		cubins[r.CubinHash] = c
		recs = append(recs, r)
	}
	path := writeOldLayout(t, recs, cubins)
	tab, err := ReadTable(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tab.Len() != 3 || len(tab.Bad()) != 1 || !strings.Contains(tab.Notice(), "layout 1") {
		t.Fatalf("old layout read: %d records, bad %v, notice %q", tab.Len(), tab.Bad(), tab.Notice())
	}
	ro, err := Open(path, &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if all, err := ro.All(""); len(all) != 3 || err == nil {
		t.Errorf("All on the old layout: %d records, %v", len(all), err)
	}
	if r, err := ro.Get(Key{Arch: "sm_90", Format: "q4_0", Rows: 8192, Cols: 4096}); err != nil || r.Model != "h20" {
		t.Errorf("Get on the old layout: %+v, %v", r.Key, err)
	}
	db, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(db.Migrated(), "rebuilt from its 3 records") || !strings.Contains(db.Migrated(), "1 unreadable") {
		t.Errorf("Migrated() = %q", db.Migrated())
	}
	got, err := db.All("")
	if err != nil || len(got) != 3 {
		t.Fatalf("after the rewrite: %d records, %v", len(got), err)
	}
	for i, want := range []string{"a100-sxm4-80gb", "h20", "h200"} {
		if got[i].Model != want || got[i].Schema != SchemaVersion {
			t.Errorf("record %d: model %q schema %d, want %q", i, got[i].Model, got[i].Schema, want)
		}
	}
	if _, err := db.Cubin("deadbeef"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the unused cubin survived the rewrite: %v", err)
	}
	db.Close()
	tab, err = ReadTable(path, nil)
	if err != nil || tab.Len() != 3 || tab.Notice() != "" {
		t.Errorf("rewritten file: %v, %d, %q", err, tab.Len(), tab.Notice())
	}
	bdb, _ := bolt.Open(path, 0o644, &bolt.Options{ReadOnly: true})
	bdb.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(keyLayout); string(v) != strconv.Itoa(FileVersion) {
			t.Errorf("layout %q after the rewrite", v)
		}
		if n := string(tx.Bucket(bucketRefs).Get([]byte(recs[0].CubinHash))); n != "1" {
			t.Errorf("reference count %q after the rewrite, want 1", n)
		}
		return nil
	})
	bdb.Close()
}

// TestModelsAreKeys: one shape tuned on two models of one arch gives two
// records; Get without a model then asks for one.
func TestModelsAreKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	path := filepath.Join(t.TempDir(), "tune.db")
	db, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, gpu := range []string{"NVIDIA H200", "NVIDIA H100 80GB HBM3"} {
		if err := db.Put(testRecord(rng, "sm_90", gpu, "q4_0", 4096, 4096), nil); err != nil {
			t.Fatal(err)
		}
	}
	all, _ := db.All("")
	if len(all) != 2 || all[0].Model != "h100-80gb-hbm3" || all[1].Model != "h200" {
		t.Fatalf("records: %+v", all)
	}
	k := Key{Arch: "sm_90", Format: "q4_0", Rows: 4096, Cols: 4096}
	if _, err := db.Get(k); !errors.Is(err, ErrBadKey) {
		t.Errorf("Get without a model over two: %v", err)
	}
	k.Model = "h200"
	if r, err := db.Get(k); err != nil || r.GPUName != "NVIDIA H200" {
		t.Errorf("Get h200: %v", err)
	}
	if err := db.Delete(k); err != nil {
		t.Fatal(err)
	}
	k.Model = ""
	if r, err := db.Get(k); err != nil || r.Model != "h100-80gb-hbm3" {
		t.Errorf("Get of the one left: %+v %v", r.Key, err)
	}
}

func TestNormalizeModel(t *testing.T) {
	for in, want := range map[string]string{
		"NVIDIA H200": "h200", "NVIDIA H20": "h20", "NVIDIA H100 80GB HBM3": "h100-80gb-hbm3",
		"NVIDIA GeForce RTX 4090": "geforce-rtx-4090", "Tesla V100-SXM2-16GB": "tesla-v100-sxm2-16gb",
		"  NVIDIA  A100-SXM4-80GB ": "a100-sxm4-80gb", "": "unknown", "NVIDIA": "unknown", "\x1b[31mH200\x1b[0m": "31mh200-0m",
		strings.Repeat("x", 100): strings.Repeat("x", 64),
	} {
		if got := NormalizeModel(in); got != want {
			t.Errorf("NormalizeModel(%q) = %q, want %q", in, got, want)
		}
		if got := NormalizeModel(want); got != want && want != "unknown" {
			t.Errorf("NormalizeModel is not idempotent on %q: %q", want, got)
		}
	}
}

// TestReadExportStrict: trailing bytes and a second export are errors; an
// export of version 1 is read.
func TestReadExportStrict(t *testing.T) {
	one := `{"kind":"gemvtune-cache-export","version":2,"records":[],"cubins":{}}`
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{one, true}, {one + "\n", true}, {one + one, false}, {one + "garbage", false}, {one + " {}", false},
		{strings.Replace(one, `"version":2`, `"version":1`, 1), true},
		{strings.Replace(one, `"version":2`, `"version":3`, 1), false},
	} {
		_, err := ReadExport(strings.NewReader(tc.in))
		if (err == nil) != tc.ok {
			t.Errorf("ReadExport(%.60q): %v, want ok %v", tc.in, err, tc.ok)
		}
	}
}

// TestImportRules: a record of the future is skipped; a schema 1 record
// of an old export gets its model from its GPU name.
func TestImportRules(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	future := testRecord(rng, "sm_90", "NVIDIA H200", "q4_0", 4096, 4096)
	future.Time = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
	old := testRecord(rng, "sm_90", "NVIDIA H20", "q4_0", 1024, 4096)
	old.Schema, old.Model = 1, ""
	path := filepath.Join(t.TempDir(), "tune.db")
	db, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := db.Import(&Export{Kind: ExportKind, Version: 1, Records: []Record{future, old}})
	if err != nil || s.Added != 1 || len(s.Skipped) != 1 || !strings.Contains(s.Skipped[0], "future") {
		t.Fatalf("import: %+v, %v", s, err)
	}
	if r, err := db.Get(Key{Arch: "sm_90", Model: "h20", Format: "q4_0", Rows: 1024, Cols: 4096}); err != nil || r.Schema != SchemaVersion {
		t.Errorf("upgraded record: %+v, %v", r.Key, err)
	}
}

// TestIndexHoldsEveryKnob: the index has one byte per knob of space.Knobs;
// a new knob must come with a new record layout and FileVersion.
func TestIndexHoldsEveryKnob(t *testing.T) {
	if len(space.Knobs) != knobBytes {
		t.Fatalf("space.Knobs has %d knobs, the index record room for %d: move the offsets after rParams and bump FileVersion", len(space.Knobs), knobBytes)
	}
	for _, k := range space.Knobs {
		if slices.Max(k.Values) > 255 {
			t.Errorf("knob %s takes %d, more than its byte holds", k.Letter, slices.Max(k.Values))
		}
	}
}
