package cache_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/space"
	bolt "go.etcd.io/bbolt"
)

func TestPutGetRoundTrip(t *testing.T) {
	db, _ := openWriter(t)
	rng := newRNG(t)
	want := randomRecord(rng, "sm_90", "q4_0", 4096, 14336)
	cubin := []byte("\x7fELF cubin for " + want.WinnerID)
	if err := db.Put(want, cubin); err != nil {
		t.Fatalf("Put: %v", err)
	}
	got, err := db.Get(want.Key)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	want.Schema, want.Layout, want.CubinHash = cache.SchemaVersion, want.Params.L, cache.CubinHash(cubin)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Get = %+v\nwant  %+v", got, want)
	}
	c, err := db.Cubin(got.CubinHash)
	if err != nil || !bytes.Equal(c, cubin) {
		t.Errorf("Cubin = %q, %v; want %q", c, err, cubin)
	}
	if _, err := db.Get(cache.Key{Arch: "sm_90", Format: "q4_0", Rows: 1, Cols: 32}); !errors.Is(err, cache.ErrNotFound) {
		t.Errorf("Get(missing) error = %v; want ErrNotFound", err)
	}
	if _, err := db.Get(cache.Key{Arch: "sm90", Format: "q4_0", Rows: 1, Cols: 32}); !errors.Is(err, cache.ErrBadKey) {
		t.Errorf("Get(bad arch) error = %v; want ErrBadKey", err)
	}
}

func TestPutValidates(t *testing.T) {
	db, _ := openWriter(t)
	rng := newRNG(t)
	tests := []struct {
		name string
		edit func(*cache.Record)
	}{
		{"bad arch", func(r *cache.Record) { r.Arch = "sm90" }},
		{"bad format", func(r *cache.Record) { r.Format = "q4/0" }},
		{"zero rows", func(r *cache.Record) { r.Rows = 0 }},
		{"id and params differ", func(r *cache.Record) { r.WinnerID = "r1f0u1s0w4" }},
		{"bad id", func(r *cache.Record) { r.WinnerID = "fast" }},
		{"bad class", func(r *cache.Record) { r.Class = "approx" }},
		{"negative median", func(r *cache.Record) { r.MedianUS = -1 }},
		{"other schema", func(r *cache.Record) { r.Schema = 7 }},
	}
	for _, tt := range tests {
		r := randomRecord(rng, "sm_90", "q8_0", 4096, 4096)
		tt.edit(&r)
		if err := db.Put(r, nil); !errors.Is(err, cache.ErrBadRecord) {
			t.Errorf("%s: Put error = %v; want ErrBadRecord", tt.name, err)
		}
	}
	// NaN figures are stored as 0, never as invalid JSON.
	r := randomRecord(rng, "sm_90", "q8_0", 4096, 4096)
	r.P, r.Candidates[2].MedianUS = math.NaN(), math.Inf(1)
	if err := db.Put(r, nil); err != nil {
		t.Fatalf("Put with NaN: %v", err)
	}
	got, err := db.Get(r.Key)
	if err != nil || got.P != 0 || got.Candidates[2].MedianUS != 0 {
		t.Errorf("NaN round trip: P=%v cand=%v err=%v; want 0, 0", got.P, got.Candidates[2].MedianUS, err)
	}
}

func TestCubinStoredOnceAndCollected(t *testing.T) {
	db, _ := openWriter(t)
	rng := newRNG(t)
	a := randomRecord(rng, "sm_90", "q4_0", 4096, 4096)
	b := randomRecord(rng, "sm_90", "q4_0", 8192, 4096)
	shared := []byte("shared cubin")
	other := []byte("other cubin")
	for _, r := range []cache.Record{a, b} {
		if err := db.Put(r, shared); err != nil {
			t.Fatal(err)
		}
	}
	h := cache.CubinHash(shared)
	if err := db.Put(a, other); err != nil { // a now uses another cubin
		t.Fatal(err)
	}
	if _, err := db.Cubin(h); err != nil {
		t.Fatalf("shared cubin gone while b uses it: %v", err)
	}
	if err := db.Delete(b.Key); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Cubin(h); !errors.Is(err, cache.ErrNotFound) {
		t.Errorf("cubin kept after its last record went: %v", err)
	}
	if _, err := db.Cubin(cache.CubinHash(other)); err != nil {
		t.Errorf("a's cubin: %v", err)
	}
	if err := db.Delete(b.Key); !errors.Is(err, cache.ErrNotFound) {
		t.Errorf("second Delete error = %v; want ErrNotFound", err)
	}
	if err := db.Delete(a.Key); err != nil {
		t.Fatal(err)
	}
	if recs, err := db.All(""); err != nil || len(recs) != 0 {
		t.Errorf("All after deleting everything = %d records, %v", len(recs), err)
	}
	if _, err := db.Cubin(cache.CubinHash(other)); !errors.Is(err, cache.ErrNotFound) {
		t.Errorf("cubin kept after delete: %v", err)
	}
}

// Amend changes several records in one transaction, keeps their cubins
// (stored once, still counted), and changes none when one key fails or
// when fn touches a key or a cubin.
func TestAmend(t *testing.T) {
	db, _ := openWriter(t)
	rng := newRNG(t)
	a := randomRecord(rng, "sm_90", "q4_0", 4096, 4096)
	b := randomRecord(rng, "sm_90", "q4_0", 8192, 4096)
	cubin := []byte("a's cubin")
	if err := db.Put(a, cubin); err != nil {
		t.Fatal(err)
	}
	if err := db.Put(b, nil); err != nil {
		t.Fatal(err)
	}
	mark := func(r *cache.Record) { r.Refined = append(r.Refined, "llama-3-8b") }
	missing := randomRecord(rng, "sm_90", "q4_0", 1024, 4096).Key
	for _, c := range []struct {
		name string
		keys []cache.Key
		fn   func(*cache.Record)
		want error
	}{
		{"a key without a record", []cache.Key{a.Key, missing}, mark, cache.ErrNotFound},
		{"a cubin changed", []cache.Key{a.Key, b.Key}, func(r *cache.Record) { mark(r); r.CubinHash = cache.CubinHash([]byte("x")) }, cache.ErrBadRecord},
		{"a key changed", []cache.Key{a.Key}, func(r *cache.Record) { r.Rows = 2048 }, cache.ErrBadRecord},
		{"invalid after", []cache.Key{a.Key}, func(r *cache.Record) { r.Class = "fast" }, cache.ErrBadRecord},
	} {
		if err := db.Amend(c.keys, c.fn); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if got, err := db.Get(a.Key); err != nil || got.Refined != nil || got.Class != a.Class || got.Rows != a.Rows {
			t.Errorf("%s: a changed: refined %v, class %s, rows %d (%v)", c.name, got.Refined, got.Class, got.Rows, err)
		}
	}
	if err := db.Amend([]cache.Key{a.Key, b.Key}, mark); err != nil {
		t.Fatal(err)
	}
	for _, r := range []cache.Record{a, b} {
		got, err := db.Get(r.Key)
		if err != nil || len(got.Refined) != 1 || got.Refined[0] != "llama-3-8b" || got.WinnerID != r.WinnerID || got.MedianUS != r.MedianUS {
			t.Errorf("%s after Amend: %+v (%v)", r.Key, got.Refined, err)
		}
	}
	snap, err := db.Snapshot(true)
	if err != nil || len(snap.Summaries) != 2 || len(snap.Bad) != 0 || snap.Summaries[0].MedianUS != a.MedianUS || len(snap.Cubins) != 1 {
		t.Fatalf("snapshot after Amend: %+v (%v)", snap, err)
	}
	if got, err := db.Cubin(cache.CubinHash(cubin)); err != nil || string(got) != string(cubin) {
		t.Fatalf("a's cubin after Amend: %q (%v)", got, err)
	}
	if err := db.Delete(a.Key); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Cubin(cache.CubinHash(cubin)); !errors.Is(err, cache.ErrNotFound) {
		t.Errorf("a's cubin counted twice after Amend: kept after its record went (%v)", err)
	}
}

func TestAllWalkSnapshot(t *testing.T) {
	db, _ := openWriter(t)
	rng := newRNG(t)
	var want []cache.Record
	for _, arch := range []string{"sm_90", "sm_80", "sm_100"} {
		for _, format := range []string{"q8_0", "q4_0"} {
			for _, sh := range []space.Shape{{Rows: 14336, Cols: 4096}, {Rows: 4096, Cols: 4096}, {Rows: 128256, Cols: 4096}} {
				r := randomRecord(rng, arch, format, sh.Rows, sh.Cols)
				cubin := []byte("cubin " + r.Key.String())
				if err := db.Put(r, cubin); err != nil {
					t.Fatal(err)
				}
				r.Schema, r.Layout, r.CubinHash = cache.SchemaVersion, r.Params.L, cache.CubinHash(cubin)
				want = append(want, r)
			}
		}
	}
	cache.SortRecords(want)
	all, err := db.All("")
	if err != nil || !reflect.DeepEqual(all, want) {
		t.Fatalf("All = %d records, %v; want %d equal records", len(all), err, len(want))
	}
	sm90, err := db.All("sm_90")
	if err != nil || len(sm90) != 6 {
		t.Fatalf("All(sm_90) = %d records, %v; want 6", len(sm90), err)
	}
	for i := 1; i < len(sm90); i++ {
		if sm90[i].Arch != "sm_90" || sm90[i-1].Format == sm90[i].Format && sm90[i-1].Rows >= sm90[i].Rows {
			t.Errorf("All(sm_90) not sorted: %s before %s", sm90[i-1].Key, sm90[i].Key)
		}
	}
	n := 0
	stop := errors.New("stop")
	if err := db.Walk("", func(cache.Record, error) error { n++; return stop }); err != stop || n != 1 {
		t.Errorf("Walk did not stop on fn's error: %v after %d", err, n)
	}
	snap, err := db.Snapshot(true)
	if err != nil || len(snap.Bad) != 0 {
		t.Fatalf("Snapshot: %v, bad %v", err, snap.Bad)
	}
	got := map[cache.Key]cache.Summary{}
	for _, s := range snap.Summaries {
		got[s.Key] = s
	}
	for _, r := range want {
		s := r.Summary()
		if g := got[r.Key]; !reflect.DeepEqual(g, s) {
			t.Errorf("summary %s = %+v\nwant %+v", r.Key, g, s)
		}
		if !bytes.Equal(snap.Cubins[r.CubinHash], []byte("cubin "+r.Key.String())) {
			t.Errorf("snapshot cubin of %s wrong", r.Key)
		}
	}
}

func TestStale(t *testing.T) {
	rng := newRNG(t)
	r := randomRecord(rng, "sm_90", "q4_0", 4096, 4096)
	r.Schema = cache.SchemaVersion
	tests := []struct {
		name    string
		edit    func(*cache.Record)
		src     string
		tool    string
		stale   bool
		wantWhy string
	}{
		{"current", func(*cache.Record) {}, r.SourceHash, cache.ToolVersion, false, ""},
		{"source changed", func(*cache.Record) {}, "ffff0000ffff0000", cache.ToolVersion, true, "kernel source changed"},
		{"tool changed", func(*cache.Record) {}, r.SourceHash, "0.2.0", true, "tuned by autotune 0.1.0, this is 0.2.0"},
		{"schema", func(x *cache.Record) { x.Schema = 99 }, r.SourceHash, cache.ToolVersion, true, "schema 99"},
	}
	for _, tt := range tests {
		x := r
		tt.edit(&x)
		stale, why := x.Stale(tt.src, tt.tool)
		if stale != tt.stale || !strings.Contains(why, tt.wantWhy) {
			t.Errorf("%s: Stale = %v, %q; want %v, %q", tt.name, stale, why, tt.stale, tt.wantWhy)
		}
		if s2, w2 := x.Summary().Stale(tt.src, tt.tool); s2 != stale || w2 != why {
			t.Errorf("%s: Summary.Stale = %v, %q; Record.Stale = %v, %q", tt.name, s2, w2, stale, why)
		}
	}
}

func TestDecodeRecordGarbage(t *testing.T) {
	rng := newRNG(t)
	good := randomRecord(rng, "sm_90", "q4_0", 4096, 4096)
	good.Schema, good.Class, good.Candidates, good.Layout = cache.SchemaVersion, cache.ClassExact, nil, good.Params.L
	data, err := good.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cache.DecodeRecord(data); err != nil {
		t.Fatalf("good record: %v", err)
	}
	bad := [][]byte{nil, {}, []byte("null"), []byte("{}"), []byte(`{"schema":"1"}`), []byte(`[1,2]`),
		data[:len(data)/2], []byte(`{"schema":2,"arch":"sm_90"}`), bytes.Replace(data, []byte(`"exact"`), []byte(`"fast"`), 1),
		bytes.Replace(data, []byte(`"rows":4096`), []byte(`"rows":"x"`), 1)}
	for _, b := range bad {
		if _, err := cache.DecodeRecord(b); !errors.Is(err, cache.ErrBadRecord) {
			t.Errorf("DecodeRecord(%.40q) error = %v; want ErrBadRecord", b, err)
		}
	}
	future := []byte(`{"schema":3,"arch":"sm_90","what":"new"}`)
	r, err := cache.DecodeRecord(future)
	if err != nil || r.Schema != 3 {
		t.Errorf("future schema: %+v, %v; want schema 3, no error", r, err)
	}
	if stale, _ := r.Stale("", cache.ToolVersion); !stale {
		t.Error("future schema record not stale")
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	garbage := bytes.Repeat([]byte("not a bbolt file, just garbage. "), 1000)
	ro := &cache.Options{ReadOnly: true, Timeout: 200 * time.Millisecond}
	tests := []struct {
		name string
		path string
		opts *cache.Options
		want error
		says string // in the message; a file that is not bbolt must not be called damaged
	}{
		{"missing read-only", filepath.Join(dir, "missing.db"), ro, cache.ErrNotExist, "does not exist"},
		{"garbage read-only", write("garbage.db", garbage), ro, cache.ErrCorrupt, "not a bbolt database"},
		{"garbage writer", write("garbage2.db", garbage), nil, cache.ErrCorrupt, "not a bbolt database"},
		{"small garbage", write("small.db", []byte("x")), ro, cache.ErrCorrupt, "not a bbolt database"},
		{"damaged bbolt", damagedBolt(t, dir), ro, cache.ErrCorrupt, "damaged bbolt file"},
		{"folder", dir, ro, cache.ErrCorrupt, "folder"},
		{"foreign bbolt", foreignBolt(t, dir), ro, cache.ErrCorrupt, "_meta"},
		{"other layout", otherLayout(t, dir), ro, cache.ErrVersion, "layout version"},
	}
	for _, tt := range tests {
		db, err := cache.Open(tt.path, tt.opts)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: Open error = %v; want %v", tt.name, err, tt.want)
		}
		if err != nil && !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%s: Open error %q does not say %q", tt.name, err, tt.says)
		}
		if err != nil && tt.says != "damaged bbolt file" && strings.Contains(err.Error(), "damaged") {
			t.Errorf("%s: Open error %q calls the file damaged", tt.name, err)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error has several lines: %q", tt.name, err)
		}
		if db != nil {
			db.Close()
		}
	}
}

// damagedBolt is a gemvtune cache whose pages past the two meta pages are
// scrambled: bbolt reads its header and fails on the freelist.
func damagedBolt(t *testing.T, dir string) string {
	p := filepath.Join(dir, "damaged.db")
	db, err := cache.Open(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	for i := 2 * os.Getpagesize(); i < len(data); i++ {
		data[i] ^= 0x5a
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func foreignBolt(t *testing.T, dir string) string {
	p := filepath.Join(dir, "foreign.db")
	b, err := bolt.Open(p, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("users")); return err }); err != nil {
		t.Fatal(err)
	}
	return p
}

func otherLayout(t *testing.T, dir string) string {
	p := filepath.Join(dir, "layout.db")
	db, err := cache.Open(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	b, err := bolt.Open(p, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("_meta")).Put([]byte("layout"), []byte("9")) }); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestEmptyFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "empty.db")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := cache.Open(p, &cache.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only Open of an empty file: %v; want an empty cache", err)
	}
	if recs, err := r.All(""); err != nil || len(recs) != 0 {
		t.Errorf("All = %v, %v; want nothing", recs, err)
	}
	if s, err := r.Snapshot(true); err != nil || len(s.Summaries) != 0 {
		t.Errorf("Snapshot = %v, %v; want nothing", s, err)
	}
	w, err := cache.Open(p, nil)
	if err != nil {
		t.Fatalf("writer Open of an empty file: %v", err)
	}
	defer w.Close()
	rec := randomRecord(newRNG(t), "sm_90", "q4_0", 64, 64)
	if err := w.Put(rec, nil); err != nil {
		t.Fatal(err)
	}
	if recs, err := r.All(""); err != nil || len(recs) != 1 {
		t.Errorf("reader after a write: %d records, %v; want 1", len(recs), err)
	}
}

// TestTruncated cuts a real cache at many lengths: every open and read
// must return (an error matching ErrCorrupt or a subset of records), never
// panic.
func TestTruncated(t *testing.T) {
	db, path := openWriter(t)
	rng := newRNG(t)
	for i := 1; i <= 40; i++ {
		if err := db.Put(randomRecord(rng, "sm_90", "q4_0", 64*i, 4096), bytes.Repeat([]byte{byte(i)}, 5000)); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	full, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, n := range []int{1, 100, 4095, 4096, 8191, 8192, 12288, len(full) / 3, len(full) / 2, len(full) - 4096, len(full) - 1} {
		p := filepath.Join(dir, "cut"+strconv.Itoa(n)+".db")
		if err := os.WriteFile(p, full[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := cache.Open(p, &cache.Options{ReadOnly: true})
		if err != nil {
			if !errors.Is(err, cache.ErrCorrupt) {
				t.Errorf("cut at %d: Open error = %v; want ErrCorrupt", n, err)
			}
			continue
		}
		if _, err := r.All(""); err != nil && !errors.Is(err, cache.ErrCorrupt) && !errors.Is(err, cache.ErrBadRecord) {
			t.Errorf("cut at %d: All error = %v", n, err)
		}
		if _, err := r.Snapshot(true); err != nil && !errors.Is(err, cache.ErrCorrupt) {
			t.Errorf("cut at %d: Snapshot error = %v", n, err)
		}
	}
	// Flipped bytes in the middle of the data pages.
	for _, off := range []int{4096 * 2, 4096 * 3, len(full) / 2} {
		bad := bytes.Clone(full)
		for i := off; i < off+512 && i < len(bad); i++ {
			bad[i] ^= 0xA5
		}
		p := filepath.Join(dir, fmt.Sprintf("flip%d.db", off))
		if err := os.WriteFile(p, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		if r, err := cache.Open(p, &cache.Options{ReadOnly: true}); err == nil {
			_, _ = r.All("")
			_, _ = r.Snapshot(true)
		}
	}
}

func TestReadOnlyRefusesWrites(t *testing.T) {
	w, path := openWriter(t)
	rec := randomRecord(newRNG(t), "sm_90", "q4_0", 64, 64)
	if err := w.Put(rec, nil); err != nil {
		t.Fatal(err)
	}
	r, err := cache.Open(path, &cache.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Put(rec, nil); !errors.Is(err, cache.ErrReadOnly) {
		t.Errorf("Put on read-only = %v; want ErrReadOnly", err)
	}
	if err := r.Delete(rec.Key); !errors.Is(err, cache.ErrReadOnly) {
		t.Errorf("Delete on read-only = %v; want ErrReadOnly", err)
	}
	r.Close()
	if _, err := r.All(""); !errors.Is(err, cache.ErrClosed) {
		t.Errorf("All after Close = %v; want ErrClosed", err)
	}
}

func TestSecondWriterLocked(t *testing.T) {
	_, path := openWriter(t)
	start := time.Now()
	_, err := cache.Open(path, &cache.Options{Timeout: 150 * time.Millisecond})
	want := fmt.Sprintf("cache %s is locked by another autotune (pid %d)", path, os.Getpid())
	if !errors.Is(err, cache.ErrLocked) || err.Error() != want {
		t.Fatalf("second writer: %v; want %q", err, want)
	}
	if d := time.Since(start); d < 150*time.Millisecond || d > 2*time.Second {
		t.Errorf("second writer gave up after %v; want about 150ms", d)
	}
}

func TestDefaultPath(t *testing.T) {
	home, err := os.UserCacheDir()
	if err != nil {
		t.Skip("no user cache dir here:", err)
	}
	tests := []struct {
		env     map[string]string
		want    string
		wantErr string
	}{
		{map[string]string{"GEMV_TUNE_CACHE": "/x/y.db", "XDG_CACHE_HOME": "/xdg"}, "/x/y.db", ""},
		{map[string]string{"GEMV_TUNE_CACHE": "", "XDG_CACHE_HOME": "/xdg"}, "/xdg/gemvtune/tune.db", ""},
		{map[string]string{"XDG_CACHE_HOME": "rel"}, "", "absolute path"},
		{map[string]string{}, filepath.Join(home, "gemvtune", "tune.db"), ""},
	}
	for _, tt := range tests {
		got, err := cache.DefaultPathEnv(func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%v: error %v; want %q", tt.env, err, tt.wantErr)
			}
			continue
		}
		if got != tt.want || err != nil {
			t.Errorf("%v: %q, %v; want %q", tt.env, got, err, tt.want)
		}
	}
}

func TestWriterCreatesFolderWithReadme(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a", "gemvtune", "tune.db")
	db, err := cache.Open(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	b, err := os.ReadFile(filepath.Join(filepath.Dir(p), "README.txt"))
	if err != nil || !strings.Contains(string(b), "gemvtune") {
		t.Errorf("README.txt: %q, %v", b, err)
	}
}
