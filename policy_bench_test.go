package gemvtune_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune"
	"github.com/gemvtune/gemvtune/cache"
)

// bigCache writes n records (2 archs × 5 formats × n/10 shapes, a few
// distinct cubins) in one import transaction.
func bigCache(b *testing.B, n int) string { return bigCacheWith(b, n, false) }

// bigCacheWith is bigCache; with alts every other record is an int8
// activation (tolerance) winner with an exact alternative and its cubin.
func bigCacheWith(b *testing.B, n int, alts bool) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "tune.db")
	db, err := cache.Open(path, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	e := &cache.Export{Kind: cache.ExportKind, Version: cache.ExportVersion, Cubins: map[string][]byte{}}
	ids := []string{"r2f0u1s0w8", "r3f2u2s0w8", "r4f0u1s1w4", "v1"}
	for i := 0; len(e.Records) < n; i++ {
		for _, arch := range []string{"sm_90", "sm_80"} {
			for _, format := range []string{"q4_0", "q8_0", "q4_K", "affine4", "bf16"} {
				r := rec(b, arch, format, 256*(i+1), 4096*(1+i%4), ids[i%len(ids)], "exact")
				r.Schema = cache.SchemaVersion
				cubin := []byte(fmt.Sprintf("cubin %s %s %s", arch, format, r.WinnerID))
				r.CubinHash = cache.CubinHash(cubin)
				e.Cubins[r.CubinHash] = cubin
				if alts && i%2 == 0 && r.WinnerID != "v1" {
					r = withExact(b, r, r.WinnerID)
					r.Class, r.Params.A = "tolerance", 1
					r.WinnerID = r.Params.ID()
					xc := []byte(fmt.Sprintf("exact cubin %s %s %s", arch, format, r.Exact.WinnerID))
					r.Exact.CubinHash = cache.CubinHash(xc)
					e.Cubins[r.Exact.CubinHash] = xc
				}
				e.Records = append(e.Records, r)
			}
		}
	}
	s, err := db.Import(e)
	if err != nil || s.Added != len(e.Records) {
		b.Fatalf("import: %v, %v", s, err)
	}
	return path
}

// BenchmarkOpen10kAnd100Lookups is docs/design.md's start-up target: Open of a
// 10 000-record cache plus 100 lookups ≤ 5 ms.
func BenchmarkOpen10kAnd100Lookups(b *testing.B) {
	benchOpenAnd100Lookups(b, bigCache(b, 10000), nil)
}

// BenchmarkOpen10kAnd100LookupsExactAlt is the start-up target with half
// the records carrying an exact alternative (a version 3 index) and
// GEMV_REQUIRE_EXACT=1.
func BenchmarkOpen10kAnd100LookupsExactAlt(b *testing.B) {
	benchOpenAnd100Lookups(b, bigCacheWith(b, 10000, true), map[string]string{"GEMV_REQUIRE_EXACT": "1"})
}

// benchOpenAnd100Lookups times Open of the cache at path plus 100 lookups
// of assorted shapes, with the environment vars.
func benchOpenAnd100Lookups(b *testing.B, path string, vars map[string]string) {
	opts := &gemvtune.Options{CachePath: path, LookupEnv: env(vars)}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p, err := gemvtune.Open(opts)
		if err != nil {
			b.Fatal(err)
		}
		for j := 0; j < 100; j++ {
			if _, err := p.Lookup("sm_90", "q4_0", 256*(j+1), 4096*(1+j%4)); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkLookupTunedExactAlt is one GEMV_REQUIRE_EXACT=1 lookup answered
// by a record's exact alternative.
func BenchmarkLookupTunedExactAlt(b *testing.B) {
	path := bigCacheWith(b, 10000, true)
	p, err := gemvtune.Open(&gemvtune.Options{CachePath: path, LookupEnv: env(map[string]string{"GEMV_REQUIRE_EXACT": "1"})})
	if err != nil {
		b.Fatal(err)
	}
	c, _ := p.Lookup("sm_90", "q4_0", 256, 4096)
	if c.Source != "tuned" || c.Class != "exact" || !strings.Contains(c.Reason, "best exact variant") {
		b.Fatalf("%s %s (%s); want the tuned exact alternative", c.Source, c.ID, c.Reason)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, _ = p.Lookup("sm_90", "q4_0", 256, 4096)
	}
}

func benchLookup(b *testing.B, rows, cols int, want string) {
	path := bigCache(b, 10000)
	p, err := gemvtune.Open(&gemvtune.Options{CachePath: path, LookupEnv: env(nil)})
	if err != nil {
		b.Fatal(err)
	}
	c, _ := p.Lookup("sm_90", "q4_0", rows, cols)
	if c.Source != want {
		b.Fatalf("source %s (%s); want %s", c.Source, c.Reason, want)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, _ = p.Lookup("sm_90", "q4_0", rows, cols)
	}
}

// BenchmarkLookupTuned is one lookup of a tuned shape (target ≤ 1 µs).
func BenchmarkLookupTuned(b *testing.B) { benchLookup(b, 4096, 16384, "tuned") }

// BenchmarkLookupNearest is one lookup answered by the nearest rule.
func BenchmarkLookupNearest(b *testing.B) { benchLookup(b, 4000, 16384, "nearest") }

// BenchmarkLookupDefault is one lookup with nothing tuned for the cols.
func BenchmarkLookupDefault(b *testing.B) { benchLookup(b, 4096, 4128, "default") }
