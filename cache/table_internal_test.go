package cache

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/gemvtune/gemvtune/space"
	bolt "go.etcd.io/bbolt"
)

// tableCache writes n records (a few archs, formats and cubins, one stale
// schema; some tolerance-class records with exact alternatives) and
// returns the path.
func tableCache(t testing.TB, n int) string { return tableCacheWith(t, n, true) }

// tableCacheWith is tableCache; without alts no record has an exact
// alternative (the index is then written as version 2).
func tableCacheWith(t testing.TB, n int, alts bool) string { return tableCacheOpts(t, n, alts, false) }

// tableCacheOpts is tableCacheWith; with g some winners and some exact
// alternatives have knob G != 0 (the index is then written as version 4).
func tableCacheOpts(t testing.TB, n int, alts, g bool) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tune.db")
	db, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	e := &Export{Kind: ExportKind, Version: ExportVersion, Cubins: map[string][]byte{}}
	for i := 0; len(e.Records) < n; i++ {
		for _, arch := range []string{"sm_90", "sm_80", "sm_100"} {
			for _, format := range []string{"q4_0", "q8_0"} {
				p := space.Params{R: []int{1, 2, 4}[rng.IntN(3)], U: 1, W: 8, L: rng.IntN(2)}
				if g && i%3 != 2 {
					p.G = []int{0, 2, 8, 128}[rng.IntN(4)]
				}
				class := ClassExact
				if rng.IntN(3) == 0 {
					class = ClassTolerance
				}
				r := Record{Schema: SchemaVersion, Key: Key{arch, format, 64 * (i + 1), 256 * (1 + i%3)}, WinnerID: p.ID(),
					Params: p, Class: class, Decision: fmt.Sprintf("%s: +%.1f %% over v1", p.ID(), 10*rng.Float64()),
					MedianUS: 100 * rng.Float64(), GBs: 4000 * rng.Float64(), PctCeiling: 90, Speedup: 1.1, P: rng.Float64() / 10,
					Throttled: i%5 == 0, GPUName: []string{"NVIDIA H200", "NVIDIA A100"}[i%2], SourceHash: "0123456789abcdef",
					ToolVersion: ToolVersion, Time: time.Date(2026, 4, 1+i%20, 10, 0, i%60, i, time.UTC)}
				if i%4 != 0 {
					cubin := testCubin(arch, format, p)
					r.CubinHash = CubinHash(cubin)
					e.Cubins[r.CubinHash] = cubin
				}
				if alts && class == ClassTolerance && i%5 != 1 {
					x := &Alternative{WinnerID: "v1", Params: space.Stock, Class: ClassExact, Kept: true,
						Decision: "kept v1: no verified variant is faster", MedianUS: 50, GBs: 1000, PctCeiling: 22, Speedup: 1, P: 1}
					if i%3 != 0 {
						q := space.Params{R: []int{2, 3, 4}[i%3], F: 1, U: 2, W: 4}
						if g && i%2 == 1 {
							q.G = 64
						}
						x = &Alternative{WinnerID: q.ID(), Params: q, Class: ClassExact, Decision: fmt.Sprintf("%s: +%d %% over v1", q.ID(), i%40),
							MedianUS: 30 * rng.Float64(), GBs: 3000 * rng.Float64(), PctCeiling: 60, Speedup: 1.4, P: 0.001}
						if i%2 == 0 {
							cubin := testCubin(arch, format, q)
							x.CubinHash = CubinHash(cubin)
							e.Cubins[x.CubinHash] = cubin
						}
					}
					r.Exact = x
				}
				e.Records = append(e.Records, r)
			}
		}
	}
	if s, err := db.Import(e); err != nil || s.Added != len(e.Records) {
		t.Fatalf("import: %v, %v", s, err)
	}
	return path
}

// testCubin is large enough that the _cubins bucket is not inline, so that
// cubins have a file offset.
func testCubin(arch, format string, p space.Params) []byte {
	return []byte(fmt.Sprintf("cubin %s %s %s %0800d", arch, format, p.ID(), 0))
}

func rawIndex(t testing.TB, path string) []byte {
	t.Helper()
	b, err := bolt.Open(path, 0o644, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var out []byte
	b.View(func(tx *bolt.Tx) error {
		out = bytes.Clone(tx.Bucket(bucketMeta).Get(keyIndex))
		return nil
	})
	return out
}

func setIndex(t testing.TB, path string, v []byte) {
	t.Helper()
	b, err := bolt.Open(path, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyIndex, v) }); err != nil {
		t.Fatal(err)
	}
}

func tableSummaries(t testing.TB, path string) []Summary {
	t.Helper()
	tb, err := ReadTable(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tb.Bad()) != 0 {
		t.Fatalf("bad entries: %v", tb.Bad())
	}
	out := make([]Summary, tb.Len())
	for i := range out {
		out[i] = tb.Summary(i)
	}
	return out
}

// TestTableVersions: writers store version 2 (version 3 when a record has
// an exact alternative, version 4 when a record or alternative has knob G);
// a version 1 index, and an unreadable one (rebuilt from the records), read
// the same.
func TestTableVersions(t *testing.T) {
	tests := []struct {
		alts, g bool
		version byte
	}{
		{false, false, indexVersion2},
		{true, false, indexVersion3},
		{false, true, indexVersion4},
		{true, true, indexVersion4},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("alternatives=%v,g=%v", tt.alts, tt.g), func(t *testing.T) { testTableVersions(t, tt.alts, tt.g, tt.version) })
	}
}

func testTableVersions(t *testing.T, alts, g bool, version byte) {
	path := tableCacheOpts(t, 120, alts, g)
	v2 := rawIndex(t, path)
	if v2[0] != version {
		t.Fatalf("index version %d; want %d", v2[0], version)
	}
	if _, ok := parseTable(v2); !ok {
		t.Fatal("a writer's version 2 index does not parse")
	}
	want := tableSummaries(t, path)
	if len(want) != 120 {
		t.Fatalf("%d summaries; want 120", len(want))
	}
	nx := 0
	for _, s := range want {
		if s.Exact.Present {
			nx++
		}
	}
	if alts != (nx > 0) {
		t.Fatalf("%d summaries with an exact alternative (alternatives %v)", nx, alts)
	}
	ng, nxg := 0, 0
	for _, s := range want {
		if s.Params.G != 0 {
			ng++
		}
		if s.Exact.Params.G != 0 {
			nxg++
		}
	}
	if g != (ng > 0) || (g && alts) != (nxg > 0) {
		t.Fatalf("%d winners and %d alternatives with G != 0 (g %v, alternatives %v)", ng, nxg, g, alts)
	}
	ro, err := Open(path, &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := ro.All("")
	if err != nil {
		t.Fatal(err)
	}
	bySummary := map[Key]Summary{}
	for _, s := range want {
		bySummary[s.Key] = s
	}
	for _, r := range recs {
		if got := bySummary[r.Key]; got != r.Summary() {
			t.Fatalf("%s: table summary %+v\nwant %+v", r.Key, got, r.Summary())
		}
	}
	ix, err := parseIndex(v2)
	if err != nil {
		t.Fatal(err)
	}
	if again, ok := ix.table(); !ok || !bytes.Equal(again, v2) {
		t.Errorf("version 2 does not round-trip through parseIndex (ok %v)", ok)
	}
	setIndex(t, path, ix.encodeV1())
	if got := tableSummaries(t, path); !reflect.DeepEqual(got, want) {
		t.Errorf("version 1 index reads differently")
	}
	db, err := Open(path, &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := db.Snapshot(false)
	if err != nil || !reflect.DeepEqual(snap.Summaries, want) {
		t.Errorf("Snapshot of version 1 differs: %v", err)
	}
	setIndex(t, path, append([]byte{indexVersion2}, v2[1:len(v2)/2]...))
	got := tableSummaries(t, path)
	gotKeys, wantKeys := map[Key]Summary{}, map[Key]Summary{}
	for i := range got {
		gotKeys[got[i].Key], wantKeys[want[i].Key] = got[i], want[i]
	}
	if !reflect.DeepEqual(gotKeys, wantKeys) {
		t.Errorf("truncated version 2 index: summaries not rebuilt from the records")
	}
}

// TestTableDamage: no cut or flipped byte of a version 3 or 4 index panics;
// what parses has every record checked.
func TestTableDamage(t *testing.T) {
	for _, g := range []bool{false, true} {
		t.Run(fmt.Sprintf("g=%v", g), func(t *testing.T) { testTableDamage(t, g) })
	}
}

func testTableDamage(t *testing.T, g bool) {
	v2 := rawIndex(t, tableCacheOpts(t, 30, true, g))
	for n := 0; n < len(v2); n++ {
		if tb, ok := parseTable(v2[:n]); ok {
			for i := 0; i < tb.Len(); i++ {
				_ = tb.Summary(i)
			}
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for k := 0; k < 2000; k++ {
		b := bytes.Clone(v2)
		for j := 0; j < 1+rng.IntN(3); j++ {
			b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
		}
		if tb, ok := parseTable(b); ok {
			for i := 0; i < tb.Len(); i++ {
				s := tb.Summary(i)
				if s.Schema == SchemaVersion && (s.Params.Validate() != nil || s.Exact.Present && s.Exact.Params.Validate() != nil) {
					t.Fatalf("damaged table passed with invalid params %+v, %+v", s.Params, s.Exact.Params)
				}
			}
		}
	}
}

func FuzzParseTable(f *testing.F) {
	tb := newTableBuilder(2)
	for _, s := range []Summary{
		{Key: Key{"sm_90", "q4_0", 64, 256}, Schema: 1, Params: space.Stock, Class: ClassExact, Decision: "kept v1", GPUName: "x", CubinHash: "ab"},
		{Key: Key{"sm_80", "bf16", 8, 8}, Schema: 1, Params: space.Stock, Class: ClassTolerance, Time: time.Unix(5, 6).UTC()},
	} {
		tb.addSummary(s)
	}
	b, _ := tb.finish().encode()
	f.Add(b)
	tb = newTableBuilder(2)
	for _, s := range []Summary{
		{Key: Key{"sm_90", "q4_0", 64, 256}, Schema: 1, Params: space.Params{R: 2, U: 1, W: 8, A: 1}, Class: ClassTolerance, Decision: "a1 won",
			Exact: ExactSummary{Present: true, Params: space.Params{R: 4, U: 2, W: 8}, Decision: "r4 won", MedianUS: 3, CubinHash: "cd"}},
		{Key: Key{"sm_90", "q4_0", 64, 512}, Schema: 1, Params: space.Params{R: 2, U: 1, W: 8, A: 1}, Class: ClassTolerance,
			Exact: ExactSummary{Present: true, Params: space.Stock, Kept: true, Decision: "kept v1", Speedup: 1, P: 1}},
		{Key: Key{"sm_80", "bf16", 8, 8}, Schema: 1, Params: space.Stock, Class: ClassExact},
	} {
		tb.addSummary(s)
	}
	b, _ = tb.finish().encode()
	f.Add(b)
	for _, withAlt := range []bool{false, true} {
		tb = newTableBuilder(2)
		s := Summary{Key: Key{"sm_90", "q4_0", 64, 256}, Schema: 1, Params: space.Params{R: 2, U: 1, W: 8, G: 8}, Class: ClassTolerance, Decision: "g8 won"}
		if withAlt {
			s.Exact = ExactSummary{Present: true, Params: space.Params{R: 4, U: 2, W: 8, G: 128}, Decision: "r4 won", CubinHash: "cd"}
		}
		tb.addSummary(s)
		tb.addSummary(Summary{Key: Key{"sm_80", "bf16", 8, 8}, Schema: 1, Params: space.Stock, Class: ClassExact})
		b, _ = tb.finish().encode()
		f.Add(b)
	}
	f.Add([]byte{2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{2})
	f.Fuzz(func(t *testing.T, b []byte) {
		tb, ok := parseTable(b)
		if !ok {
			return
		}
		for i := 0; i < tb.Len(); i++ {
			s := tb.Summary(i)
			if err := s.Key.Validate(); err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
		}
		if again, ok := tb.encode(); !ok || !bytes.Equal(again, b) {
			t.Fatalf("re-encode differs")
		}
	})
}

// TestTableSide: what a record cannot hold is kept exactly, and such a
// table is not written as version 2.
func TestTableSide(t *testing.T) {
	odd := []Summary{
		{Key: Key{"sm_90", "q4_0", 64, 256}, Schema: 1, Params: space.Stock, Class: ClassExact,
			Time: time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("CET", 3600))},
		{Key: Key{"sm_90", "q4_0", 64, 512}, Schema: 7, Params: space.Params{R: 300}, Class: "weird"},
		{Key: Key{"sm_90", "q4_0", 64, 768}, Schema: -1, Params: space.Stock, Class: ClassExact},
		{Key: Key{"sm_90", "q4_0", 64, 1024}, Schema: 1, Params: space.Stock, Class: ClassTolerance, Decision: "plain"},
	}
	tb := newTableBuilder(0)
	for _, s := range odd {
		tb.addSummary(s)
	}
	tab := tb.finish()
	for i, want := range odd {
		if got := tab.Summary(i); !reflect.DeepEqual(got, want) || tab.Key(i) != want.Key {
			t.Errorf("summary %d = %+v; want %+v", i, got, want)
		}
	}
	if _, ok := tab.encode(); ok {
		t.Error("a table with side summaries was encoded as version 2")
	}
}

// TestLoadCubin: a located cubin is read back; a wrong location falls back
// to the hash; a missing file is an error.
func TestLoadCubin(t *testing.T) {
	path := tableCache(t, 12)
	tb, err := ReadTable(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := 0; i < tb.Len(); i++ {
		s := tb.Summary(i)
		if s.CubinHash == "" {
			continue
		}
		ref, ok := tb.Cubin(s.CubinHash)
		if !ok || ref.Off < 0 {
			t.Fatalf("cubin of %s not located: %+v", s.Key, ref)
		}
		want := testCubin(s.Arch, s.Format, s.Params)
		if x := s.Exact; x.Present && x.CubinHash != "" {
			xref, ok := tb.Cubin(x.CubinHash)
			if got, err := LoadCubin(path, xref); !ok || err != nil || !bytes.Equal(got, testCubin(s.Arch, s.Format, x.Params)) {
				t.Errorf("exact alternative's cubin of %s: %q, %v, %v", s.Key, got, ok, err)
			}
			n++
		}
		if got, err := LoadCubin(path, ref); err != nil || !bytes.Equal(got, want) {
			t.Errorf("LoadCubin = %q, %v; want %q", got, err, want)
		}
		ref.Off++
		if got, err := LoadCubin(path, ref); err != nil || !bytes.Equal(got, want) {
			t.Errorf("LoadCubin at a wrong offset = %q, %v; want %q", got, err, want)
		}
		n++
	}
	if n == 0 {
		t.Fatal("no cubins")
	}
	if _, ok := tb.Cubin(CubinHash([]byte("never stored"))); ok {
		t.Error("an unknown cubin was located")
	}
	os.Remove(path)
	for h, ref := range tb.cubins {
		if b, err := LoadCubin(path, ref); err == nil || b != nil {
			t.Errorf("LoadCubin %s of a removed file = %q, %v", short(h), b, err)
		}
		break
	}
}

// BenchmarkReadTable reads a 10 000-record cache without exact
// alternatives (a version 2 index).
func BenchmarkReadTable(b *testing.B) {
	path := tableCacheWith(b, 10000, false)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := ReadTable(path, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadTableExactAlt reads a 10 000-record cache where most
// tolerance-class records have an exact alternative (a version 3 index).
func BenchmarkReadTableExactAlt(b *testing.B) {
	path := tableCache(b, 10000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := ReadTable(path, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadTableV1 reads the same cache with a version 1 index.
func BenchmarkReadTableV1(b *testing.B) {
	path := tableCacheWith(b, 10000, false)
	ix, err := parseIndex(rawIndex(b, path))
	if err != nil {
		b.Fatal(err)
	}
	setIndex(b, path, ix.encodeV1())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := ReadTable(path, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// TestKnobA: the activation-path knob survives every encoding (a summary
// of version 2, both index versions).
func TestKnobA(t *testing.T) {
	if n := reflect.TypeFor[space.Params]().NumField(); n != 8 {
		t.Fatalf("space.Params has %d knobs; summaries and table records encode 8: extend them", n)
	}
	s := Summary{Schema: 1, Params: space.Params{R: 2, F: 0, U: 1, S: 0, W: 8, L: 0, A: 1}, Class: ClassTolerance, Decision: "d"}
	b := encodeSummary(s)
	if b[0] != summaryVersion2 {
		t.Errorf("summary with A=1 written as version %d", b[0])
	}
	if got, err := decodeSummary(b, nil); err != nil || got != s {
		t.Errorf("summary with A=1 = %+v, %v", got, err)
	}
	s.Params.A = 0
	if b := encodeSummary(s); b[0] != summaryVersion {
		t.Errorf("summary with A=0 written as version %d", b[0])
	}
	path := filepath.Join(t.TempDir(), "tune.db")
	db, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i, a := range []int{1, 0, 1} {
		p := space.Params{R: 2, U: 1, W: 8, A: a}
		r := Record{Key: Key{"sm_90", "q4_0", 64 * (i + 1), 256}, WinnerID: p.ID(), Params: p, Class: ClassTolerance,
			SourceHash: "x", GPUName: "g"}
		if err := db.Put(r, nil); err != nil {
			t.Fatal(err)
		}
	}
	check := func(what string) {
		t.Helper()
		snap, err := db.Snapshot(false)
		if err != nil || len(snap.Summaries) != 3 {
			t.Fatalf("%s: %v, %d summaries", what, err, len(snap.Summaries))
		}
		for _, s := range snap.Summaries {
			if want := 1 - (s.Rows/64-1)%2; s.Params.A != want {
				t.Errorf("%s: %s has A=%d; want %d", what, s.Key, s.Params.A, want)
			}
		}
	}
	check("version 2 index")
	if _, ok := parseTable(rawIndex(t, path)); !ok {
		t.Fatal("version 2 index with A=1 does not parse")
	}
	ix, err := parseIndex(rawIndex(t, path))
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	setIndex(t, path, ix.encodeV1())
	db, err = Open(path, &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	check("version 1 index")
}

// TestKnobG: knob G of winners and exact alternatives survives the table
// (version 4); a table without G is written as before (version 2 or 3,
// which are version 4 without its G columns).
func TestKnobG(t *testing.T) {
	sum := func(rows, g int, x ExactSummary) Summary {
		p := space.Params{R: 2, U: 1, W: 8, G: g, A: 1}
		return Summary{Key: Key{"sm_90", "q4_0", rows, 4096}, Schema: 1, Params: p, Class: ClassTolerance,
			Decision: p.ID() + " won", MedianUS: 3, GBs: 4000, Speedup: 1.2, P: 0.01, GPUName: "NVIDIA H200",
			SourceHash: "abc", ToolVersion: ToolVersion, CubinHash: "ff", Time: time.Unix(100, 5).UTC(), Exact: x}
	}
	alt := func(g int) ExactSummary {
		q := space.Params{R: 4, F: 2, U: 2, W: 4, G: g, L: 1}
		return ExactSummary{Present: true, Params: q, Decision: q.ID() + ": +30 %", MedianUS: 4, GBs: 3000, Speedup: 1.1, P: 0.02, CubinHash: "ee"}
	}
	kept := ExactSummary{Present: true, Params: space.Stock, Kept: true, Decision: "kept v1", Speedup: 1, P: 1}
	tests := []struct {
		name    string
		sums    []Summary
		version byte
	}{
		{"winners only", []Summary{sum(64, 8, ExactSummary{}), sum(128, 0, ExactSummary{}), sum(192, 128, ExactSummary{})}, indexVersion4},
		{"winner and alternative", []Summary{sum(64, 2, alt(16)), sum(128, 0, ExactSummary{}), sum(192, 4, kept)}, indexVersion4},
		{"alternative only", []Summary{sum(64, 0, alt(32)), sum(128, 0, alt(0))}, indexVersion4},
		{"winner g, alternative without", []Summary{sum(64, 64, alt(0))}, indexVersion4},
		{"no g, alternatives", []Summary{sum(64, 0, alt(0)), sum(128, 0, kept)}, indexVersion3},
		{"no g", []Summary{sum(64, 0, ExactSummary{}), sum(128, 0, ExactSummary{})}, indexVersion2},
	}
	for _, tt := range tests {
		b := tableRoundTrip(t, tt.name, tt.sums, tt.version)
		// The same summaries with G = 0 give version 4 without its columns.
		tb := newTableBuilder(len(tt.sums))
		nalt := 0
		for _, s := range tt.sums {
			s.Params.G, s.Exact.Params.G = 0, 0
			if s.Exact.Present {
				nalt++
			}
			tb.addSummary(s)
		}
		old, _ := tb.finish().encode()
		if tt.version != indexVersion4 {
			if !bytes.Equal(old, b) {
				t.Errorf("%s: G = 0 encodes differently", tt.name)
			}
			continue
		}
		want := b[:len(b)-len(tt.sums)-nalt]
		if nalt == 0 {
			want = want[:len(want)-4] // version 2 has no alternative count
		}
		if old[0] != indexVersion2 && old[0] != indexVersion3 || !bytes.Equal(old[1:], want[1:]) {
			t.Errorf("%s: version %d with G = 0 is not version 4 without the G columns", tt.name, old[0])
		}
		// All G 0 in a version 4 index: not what a writer stores.
		z := bytes.Clone(b)
		clear(z[len(z)-len(tt.sums)-nalt:])
		if _, ok := parseTable(z); ok {
			t.Errorf("%s: version 4 with every G 0 parsed", tt.name)
		}
		// An invalid G is damage.
		for _, bad := range []byte{1} {
			z := bytes.Clone(b)
			z[len(z)-1] = bad
			if _, ok := parseTable(z); ok {
				t.Errorf("%s: version 4 with G %d parsed", tt.name, bad)
			}
		}
	}

	// Through a cache: Put, Get, Snapshot, ReadTable, a version 1 index,
	// and back to version 3 once no record has G.
	path := filepath.Join(t.TempDir(), "tune.db")
	db, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	records := func(gs ...[2]int) []Record {
		var rs []Record
		for i, g := range gs {
			p := space.Params{R: 2, U: 1, W: 8, G: g[0], A: 1}
			q := space.Params{R: 4, U: 2, W: 4, G: g[1]}
			rs = append(rs, Record{Key: Key{"sm_90", "q4_0", 64 * (i + 1), 256}, WinnerID: p.ID(), Params: p, Class: ClassTolerance,
				SourceHash: "x", GPUName: "g", Exact: &Alternative{WinnerID: q.ID(), Params: q, Class: ClassExact, Decision: "d"}})
		}
		return rs
	}
	check := func(what string, version byte, want []Record) {
		t.Helper()
		if v := rawIndex(t, path)[0]; v != version {
			t.Errorf("%s: index version %d; want %d", what, v, version)
		}
		got := map[Key]Summary{}
		for _, s := range tableSummaries(t, path) {
			got[s.Key] = s
		}
		snap, err := db.Snapshot(false)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range want {
			s := got[r.Key]
			if s.Params != r.Params || s.Exact.Params != r.Exact.Params {
				t.Errorf("%s: %s: table has %s, exact %s; want %s, %s", what, r.Key, s.Params.ID(), s.Exact.Params.ID(), r.WinnerID, r.Exact.WinnerID)
			}
			if g, err := db.Get(r.Key); err != nil || g.Params != r.Params || g.Exact.Params != r.Exact.Params {
				t.Errorf("%s: Get %s = %+v, %v", what, r.Key, g.Params, err)
			}
		}
		for _, s := range snap.Summaries {
			if s != got[s.Key] {
				t.Errorf("%s: snapshot %+v\ntable    %+v", what, s, got[s.Key])
			}
		}
	}
	withG := records([2]int{8, 0}, [2]int{0, 128}, [2]int{2, 4}, [2]int{0, 0})
	for _, r := range withG {
		if err := db.Put(r, nil); err != nil {
			t.Fatal(err)
		}
	}
	check("version 4", indexVersion4, withG)
	ix, err := parseIndex(rawIndex(t, path))
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	setIndex(t, path, ix.encodeV1())
	if db, err = Open(path, nil); err != nil {
		t.Fatal(err)
	}
	check("version 1 index", indexVersion, withG)
	noG := records([2]int{0, 0}, [2]int{0, 0}, [2]int{0, 0}, [2]int{0, 0})
	for _, r := range noG {
		if err := db.Put(r, nil); err != nil {
			t.Fatal(err)
		}
	}
	check("G replaced by 0", indexVersion3, noG)
}

// TestTablePDL: the winners' PDL-chain times survive the table (version 5:
// version 4's sections, its G columns all 0 when no G is set, then one f64
// per record); a table without them is written as before; an index with
// every time 0, or a negative one, is damage; and through a cache the time
// of a Put record reaches ReadTable.
func TestTablePDL(t *testing.T) {
	sum := func(rows, g int, pdl float64, x ExactSummary) Summary {
		p := space.Params{R: 2, U: 2, S: 2, W: 16, G: g, L: 1, A: 1}
		return Summary{Key: Key{"sm_90", "q4_0", rows, 4096}, Schema: 1, Params: p, Class: ClassTolerance,
			Decision: p.ID() + " won", MedianUS: 5, GBs: 1900, Speedup: 3.9, P: 1e-12, GPUName: "NVIDIA H200",
			SourceHash: "abc", ToolVersion: ToolVersion, CubinHash: "ff", Time: time.Unix(100, 5).UTC(), PDLUS: pdl, Exact: x}
	}
	alt := ExactSummary{Present: true, Params: space.Params{R: 4, U: 2, S: 2, W: 8, G: 2, L: 1}, Decision: "alt: +24 %",
		MedianUS: 6, GBs: 1600, Speedup: 3.2, P: 1e-11, CubinHash: "ee"}
	tests := []struct {
		name    string
		sums    []Summary
		version byte
	}{
		{"pdl only", []Summary{sum(64, 0, 4.6, ExactSummary{}), sum(128, 0, 0, ExactSummary{})}, indexVersion5},
		{"pdl, g and an alternative", []Summary{sum(64, 8, 4.6, alt), sum(128, 0, 7.1, ExactSummary{})}, indexVersion5},
		{"no pdl, g", []Summary{sum(64, 8, 0, alt)}, indexVersion4},
		{"no pdl", []Summary{sum(64, 0, 0, ExactSummary{})}, indexVersion2},
	}
	for _, tt := range tests {
		b := tableRoundTrip(t, tt.name, tt.sums, tt.version)
		if tt.version != indexVersion5 {
			continue
		}
		n := len(tt.sums)
		z := bytes.Clone(b)
		clear(z[len(z)-8*n:])
		if _, ok := parseTable(z); ok {
			t.Errorf("%s: version 5 with every time 0 parsed", tt.name)
		}
		z = bytes.Clone(b)
		binary.LittleEndian.PutUint64(z[len(z)-8:], math.Float64bits(-1))
		if _, ok := parseTable(z); ok {
			t.Errorf("%s: version 5 with a negative time parsed", tt.name)
		}
	}

	path := filepath.Join(t.TempDir(), "tune.db")
	db, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := space.Params{R: 2, U: 2, S: 2, W: 16, A: 1}
	r := Record{Key: Key{"sm_90", "q4_K", 4096, 4096}, WinnerID: p.ID(), Params: p, Class: ClassTolerance,
		SourceHash: "x", GPUName: "g", MedianUS: 5.27, PDLUS: 4.62}
	if err := db.Put(r, []byte("cubin")); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if v := rawIndex(t, path)[0]; v != indexVersion5 {
		t.Errorf("through the cache: index version %d; want %d", v, indexVersion5)
	}
	tab, err := ReadTable(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tab.Len() != 1 || tab.Summary(0).PDLUS != 4.62 {
		t.Errorf("through the cache: %d summaries, PDLUS %v; want 4.62", tab.Len(), tab.Summary(0).PDLUS)
	}
}

// tableRoundTrip builds a table of sums, checks that it encodes as version,
// parses back to the same summaries and re-encodes to the same bytes, and
// returns the encoding.
func tableRoundTrip(t *testing.T, name string, sums []Summary, version byte) []byte {
	t.Helper()
	tb := newTableBuilder(len(sums))
	for _, s := range sums {
		tb.addSummary(s)
	}
	b, ok := tb.finish().encode()
	if !ok || b[0] != version {
		t.Fatalf("%s: encoded %v as version %d; want %d", name, ok, b[0], version)
	}
	tab, ok := parseTable(b)
	if !ok {
		t.Fatalf("%s: version %d does not parse", name, b[0])
	}
	for i, want := range sums {
		if got := tab.Summary(i); got != want {
			t.Errorf("%s: summary %d = %+v\nwant %+v", name, i, got, want)
		}
	}
	if again, ok := tab.encode(); !ok || !bytes.Equal(again, b) {
		t.Errorf("%s: re-encode differs", name)
	}
	return b
}
