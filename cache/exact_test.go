package cache_test

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/space"
)

// toleranceWithExact returns a tolerance-class record with an exact
// alternative (kept: stock kept).
func toleranceWithExact(t testing.TB, arch, format string, rows, cols int, kept bool) cache.Record {
	t.Helper()
	r := randomRecord(newRNG(t), arch, format, rows, cols)
	r.Class = cache.ClassTolerance
	r.Params.A = 1
	r.WinnerID = r.Params.ID()
	q := space.Params{R: 4, F: 2, U: 2, W: 8}
	r.Exact = &cache.Alternative{WinnerID: q.ID(), Params: q, Class: cache.ClassExact, Decision: q.ID() + ": +33.0 % over v1 (p=0.001)",
		MedianUS: 21.5, GBs: 2800, PctCeiling: 63, Speedup: 1.33, P: 0.001}
	if kept {
		r.Exact = &cache.Alternative{WinnerID: "v1", Params: space.Stock, Class: cache.ClassExact, Kept: true,
			Decision: "kept v1: no verified variant is faster", MedianUS: 28.6, GBs: 2100, PctCeiling: 47, Speedup: 1, P: 1}
	}
	return r
}

// withG sets knob G of r's winner and of its exact alternative.
func withG(r cache.Record, g, xg int) cache.Record {
	r.Params.G, r.Exact.Params.G = g, xg
	r.WinnerID, r.Exact.WinnerID = r.Params.ID(), r.Exact.Params.ID()
	return r
}

// TestPutGetExact: a record round-trips with and without an exact
// alternative, its cubin is stored once per content, counted, and collected.
func TestPutGetExact(t *testing.T) {
	db, _ := openWriter(t)
	tests := []struct {
		name       string
		rec        cache.Record
		exactCubin []byte
	}{
		{"with alternative", toleranceWithExact(t, "sm_90", "q4_0", 4096, 4096, false), []byte("exact cubin r4f2u2s0w8")},
		{"alternative kept stock", toleranceWithExact(t, "sm_90", "q4_0", 8192, 4096, true), nil},
		{"alternative without cubin", toleranceWithExact(t, "sm_90", "q4_0", 1024, 4096, false), nil},
		{"without alternative", randomRecord(newRNG(t), "sm_90", "q8_0", 4096, 4096), nil},
		{"winner and alternative with g", withG(toleranceWithExact(t, "sm_90", "q8_0", 8192, 4096, false), 8, 128), []byte("exact cubin g128")},
		{"alternative with g", withG(toleranceWithExact(t, "sm_90", "q8_0", 1024, 4096, false), 0, 2), nil},
	}
	for _, tt := range tests {
		cubin := []byte("cubin " + tt.rec.Key.String())
		if err := db.Put(tt.rec, cubin, tt.exactCubin); err != nil {
			t.Fatalf("%s: Put: %v", tt.name, err)
		}
		got, err := db.Get(tt.rec.Key)
		if err != nil {
			t.Fatalf("%s: Get: %v", tt.name, err)
		}
		want := tt.rec
		want.Schema, want.Layout, want.CubinHash = cache.SchemaVersion, want.Params.L, cache.CubinHash(cubin)
		if want.Exact != nil {
			x := *want.Exact
			if tt.exactCubin != nil {
				x.CubinHash = cache.CubinHash(tt.exactCubin)
			}
			want.Exact = &x
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Get = %+v\nwant  %+v", tt.name, got, want)
		}
		if tt.exactCubin != nil {
			if c, err := db.Cubin(got.Exact.CubinHash); err != nil || !bytes.Equal(c, tt.exactCubin) {
				t.Errorf("%s: exact cubin = %q, %v", tt.name, c, err)
			}
		}
		snap, err := db.Snapshot(true)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range snap.Summaries {
			if s.Key == want.Key && s != want.Summary() {
				t.Errorf("%s: snapshot summary %+v\nwant %+v", tt.name, s, want.Summary())
			}
		}
		if tt.exactCubin != nil && !bytes.Equal(snap.Cubins[got.Exact.CubinHash], tt.exactCubin) {
			t.Errorf("%s: snapshot lacks the exact cubin", tt.name)
		}
	}
	// The exact cubin is shared by content and collected with its last user.
	a, b := tests[0].rec, tests[2].rec
	xc := tests[0].exactCubin
	if err := db.Put(b, nil, xc); err != nil {
		t.Fatal(err)
	}
	if err := db.Delete(a.Key); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Cubin(cache.CubinHash(xc)); err != nil {
		t.Errorf("exact cubin gone while %s uses it: %v", b.Key, err)
	}
	if err := db.Put(b, nil); err != nil { // replaced without it
		t.Fatal(err)
	}
	if _, err := db.Cubin(cache.CubinHash(xc)); !errors.Is(err, cache.ErrNotFound) {
		t.Errorf("exact cubin kept after its last record dropped it: %v", err)
	}
}

// TestPutExactValidates: a bad alternative is refused.
func TestPutExactValidates(t *testing.T) {
	db, _ := openWriter(t)
	tests := []struct {
		name string
		edit func(r *cache.Record)
	}{
		{"exact winner", func(r *cache.Record) { r.Class, r.Params.A = cache.ClassExact, 0; r.WinnerID = r.Params.ID() }},
		{"tolerance alternative", func(r *cache.Record) { r.Exact.Class = cache.ClassTolerance }},
		{"id and params differ", func(r *cache.Record) { r.Exact.WinnerID = "r2f0u1s0w8" }},
		{"bad id", func(r *cache.Record) { r.Exact.WinnerID = "r9" }},
		{"kept names a variant", func(r *cache.Record) { r.Exact.Kept = true }},
		{"negative figure", func(r *cache.Record) { r.Exact.GBs = -1 }},
	}
	for _, tt := range tests {
		r := toleranceWithExact(t, "sm_90", "q4_0", 4096, 4096, false)
		tt.edit(&r)
		if err := db.Put(r, nil); !errors.Is(err, cache.ErrBadRecord) {
			t.Errorf("%s: Put = %v; want ErrBadRecord", tt.name, err)
		}
	}
	r := randomRecord(newRNG(t), "sm_90", "q4_0", 4096, 4096)
	if err := db.Put(r, nil, []byte("x")); !errors.Is(err, cache.ErrBadRecord) {
		t.Errorf("exact cubin without alternative: %v", err)
	}
	if err := db.Put(toleranceWithExact(t, "sm_90", "q4_0", 4096, 4096, false), nil, []byte("x"), []byte("y")); !errors.Is(err, cache.ErrBadRecord) {
		t.Errorf("two exact cubins: %v", err)
	}
}

// TestDecodeOldRecord: a schema 1 record written before exact
// alternatives existed decodes, without one; one with it decodes it.
func TestDecodeOldRecord(t *testing.T) {
	old := `{"schema":1,"arch":"sm_90","format":"q4_0","rows":4096,"cols":4096,"winner":"r2f0u1s0w8a1",
		"params":{"R":2,"F":0,"U":1,"S":0,"W":8,"L":0,"A":1},"class":"tolerance","layout":0,"decision":"d",
		"median_us":1,"gbs":2,"pct_ceiling":3,"speedup":1.5,"p":0.01,"source_hash":"x","tool_version":"0.1.0",
		"time":"2026-04-01T10:00:00Z"}`
	r, err := cache.DecodeRecord([]byte(old))
	if err != nil || r.Exact != nil || r.WinnerID != "r2f0u1s0w8a1" || r.Params.G != 0 {
		t.Fatalf("old record = %+v, %v", r, err)
	}
	withAlt := strings.Replace(old, `"decision":"d",`, `"decision":"d","exact":{"winner":"r4f0u1s0w8","params":{"R":4,"F":0,"U":1,"S":0,"W":8,"L":0,"A":0},
		"class":"exact","kept_stock":false,"decision":"r4 won","median_us":2,"gbs":1,"pct_ceiling":1,"speedup":1.2,"p":0.02},`, 1)
	r, err = cache.DecodeRecord([]byte(withAlt))
	if err != nil || r.Exact == nil || r.Exact.WinnerID != "r4f0u1s0w8" || r.Exact.Speedup != 1.2 {
		t.Fatalf("record with alternative = %+v, %v", r.Exact, err)
	}
	if s := r.Summary(); !s.Exact.Present || s.Exact.Params != r.Exact.Params || s.Exact.Decision != "r4 won" {
		t.Errorf("summary of the alternative = %+v", s.Exact)
	}
	// Knob G is the JSON field "G" of params; records before it have none.
	withG := strings.NewReplacer(`"r2f0u1s0w8a1"`, `"r2f0u1s0w8g8a1"`, `"W":8,"L":0,"A":1`, `"W":8,"G":8,"L":0,"A":1`,
		`"r4f0u1s0w8"`, `"r4f0u1s0w8g128"`, `"W":8,"L":0,"A":0`, `"W":8,"G":128,"L":0,"A":0`).Replace(withAlt)
	r, err = cache.DecodeRecord([]byte(withG))
	if err != nil || r.Params.G != 8 || r.Exact == nil || r.Exact.Params.G != 128 {
		t.Fatalf("record with G = %+v, %v", r, err)
	}
	enc, err := r.Encode()
	if err != nil || !strings.Contains(string(enc), `"G":8,`) || !strings.Contains(string(enc), `"G":128,`) {
		t.Errorf("encoded record lacks G: %s, %v", enc, err)
	}
}

// TestExportImportExact: alternatives and their cubins survive export,
// JSON and import; a missing or forged exact cubin skips the record.
func TestExportImportExact(t *testing.T) {
	src, _ := openWriter(t)
	a := toleranceWithExact(t, "sm_90", "q4_0", 4096, 4096, false)
	k := toleranceWithExact(t, "sm_90", "q4_0", 8192, 4096, true)
	xc := []byte("exact cubin of a")
	if err := src.Put(a, []byte("cubin a"), xc); err != nil {
		t.Fatal(err)
	}
	if err := src.Put(k, []byte("cubin k")); err != nil {
		t.Fatal(err)
	}
	e, err := src.Export("")
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Cubins) != 3 || !bytes.Equal(e.Cubins[cache.CubinHash(xc)], xc) {
		t.Fatalf("export has %d cubins; want 3 with the exact one", len(e.Cubins))
	}
	var buf bytes.Buffer
	if err := e.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"exact": {`) {
		t.Errorf("export JSON lacks the exact alternative")
	}
	back, err := cache.ReadExport(&buf)
	if err != nil || !reflect.DeepEqual(back.Records, e.Records) {
		t.Fatalf("export does not round-trip through JSON: %v", err)
	}
	dst, _ := openWriter(t)
	if s, err := dst.Import(back); err != nil || s.Added != 2 || len(s.Skipped) != 0 {
		t.Fatalf("import: %v, %v", s, err)
	}
	got, err := dst.All("")
	if err != nil || !reflect.DeepEqual(got, e.Records) {
		t.Fatalf("imported records differ: %v", err)
	}
	if c, err := dst.Cubin(cache.CubinHash(xc)); err != nil || !bytes.Equal(c, xc) {
		t.Errorf("imported exact cubin: %q, %v", c, err)
	}
	for _, tt := range []struct {
		name  string
		cubin []byte
		why   string
	}{{"missing", nil, "exact alternative's cubin"}, {"forged", []byte("forged"), "does not match"}} {
		bad := *back
		bad.Cubins = map[string][]byte{}
		for h, c := range back.Cubins {
			bad.Cubins[h] = c
		}
		delete(bad.Cubins, cache.CubinHash(xc))
		if tt.cubin != nil {
			bad.Cubins[cache.CubinHash(xc)] = tt.cubin
		}
		other, _ := openWriter(t)
		s, err := other.Import(&bad)
		if err != nil || s.Added != 1 || len(s.Skipped) != 1 || !strings.Contains(s.Skipped[0], tt.why) {
			t.Errorf("%s exact cubin: %+v, %v", tt.name, s, err)
		}
	}
}
