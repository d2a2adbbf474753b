package gemvtune_test

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/space"
)

// bigCubin is large enough to get its own place in the file (small ones
// are copied at Open).
func bigCubin(r cache.Record) []byte {
	return []byte(r.WinnerID + strings.Repeat(" cubin of "+r.Arch, 200))
}

func writeBigCubins(t *testing.T, recs ...cache.Record) string {
	t.Helper()
	path := writeCache(t)
	db, err := cache.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, r := range recs {
		if err := db.Put(r, bigCubin(r)); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// TestCubinReadOnFirstUse: Open does not read cubins; the first lookup
// that returns one reads it, and later ones return the same bytes.
func TestCubinReadOnFirstUse(t *testing.T) {
	r := rec(t, "sm_90", "q4_0", 4096, 4096, "r2f0u1s0w8", "exact")
	near := rec(t, "sm_90", "q4_0", 1024, 4096, "r3f0u1s0w8", "exact")
	p := open(t, writeBigCubins(t, r, near), nil)
	for i := 0; i < 2; i++ {
		if c := lookup(t, p, "sm_90", "q4_0", 4096, 4096); c.Source != "tuned" || !bytes.Equal(c.Cubin, bigCubin(r)) {
			t.Errorf("tuned: %s, cubin %d bytes; want the stored %d", c.Source, len(c.Cubin), len(bigCubin(r)))
		}
		if c := lookup(t, p, "sm_90", "q4_0", 1000, 4096); c.Source != "nearest" || !bytes.Equal(c.Cubin, bigCubin(near)) {
			t.Errorf("nearest: %s, cubin %d bytes", c.Source, len(c.Cubin))
		}
	}
}

// TestFileChangesAfterOpen: whatever happens to the file after Open,
// lookups answer from what Open read and never crash; a cubin not read yet
// is either the stored one or nil (compile the source).
func TestFileChangesAfterOpen(t *testing.T) {
	recs := []cache.Record{
		rec(t, "sm_90", "q4_0", 4096, 4096, "r2f0u1s0w8", "exact"),
		rec(t, "sm_90", "q8_0", 4096, 4096, "r3f0u1s0w8", "exact"),
		rec(t, "sm_80", "q4_0", 4096, 4096, "r4f0u1s0w8", "exact"),
	}
	changes := map[string]func(path string){
		"removed":   func(path string) { os.Remove(path) },
		"truncated": func(path string) { os.Truncate(path, 0) },
		"garbage":   func(path string) { os.WriteFile(path, bytes.Repeat([]byte("garbage!"), 4096), 0o644) },
		"rewritten": func(path string) {
			db, err := cache.Open(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for _, r := range recs {
				db.Delete(r.Key)
			}
			for i := 0; i < 50; i++ {
				r := rec(t, "sm_90", "q4_0", 64*(i+1), 4096, "r1f0u2s0w8", "exact")
				db.Put(r, bytes.Repeat([]byte{byte(i)}, 5000))
			}
		},
	}
	for name, change := range changes {
		path := writeBigCubins(t, recs...)
		p := open(t, path, nil)
		change(path)
		for _, r := range recs {
			c := lookup(t, p, r.Arch, r.Format, r.Rows, r.Cols)
			if c.Source != "tuned" || c.ID != r.WinnerID {
				t.Errorf("%s: %s: %s %s; want tuned %s", name, r.Key, c.Source, c.ID, r.WinnerID)
			}
			if c.Cubin != nil && !bytes.Equal(c.Cubin, bigCubin(r)) {
				t.Errorf("%s: %s: wrong cubin", name, r.Key)
			}
		}
	}
}

// TestLookupNoAllocs: the tuned and nearest paths allocate nothing once
// warm.
func TestLookupNoAllocs(t *testing.T) {
	path := writeCache(t, rec(t, "sm_90", "q4_0", 4096, 4096, "r2f0u1s0w8", "exact"),
		rec(t, "sm_90", "q4_0", 1024, 4096, "r3f0u1s0w8", "exact"))
	p := open(t, path, nil)
	for _, rows := range []int{4096, 3000} {
		lookup(t, p, "sm_90", "q4_0", rows, 4096)
		if n := testing.AllocsPerRun(100, func() { _, _ = p.Lookup("sm_90", "q4_0", rows, 4096) }); n != 0 {
			t.Errorf("Lookup of %dx4096 allocates %v times; want 0", rows, n)
		}
	}
}

// TestConcurrentLookups: many goroutines looking up at once (run with
// -race) agree with a sequential lookup.
func TestConcurrentLookups(t *testing.T) {
	var recs []cache.Record
	for i := 1; i <= 20; i++ {
		for _, f := range []string{"q4_0", "q8_0"} {
			recs = append(recs, rec(t, "sm_90", f, 256*i, 4096*(1+i%2), []string{"r2f0u1s0w8", "r3f0u1s0w8"}[i%2], "exact"))
		}
	}
	path := writeBigCubins(t, recs...)
	shared := open(t, path, nil)
	fresh := open(t, path, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				rows, f := 128*(1+(i*7+g)%45), []string{"q4_0", "q8_0"}[i%2]
				c, err := shared.Lookup("sm_90", f, rows, 4096*(1+i%2))
				if err != nil {
					errs <- err
					return
				}
				if c.Cubin != nil && !bytes.HasPrefix(c.Cubin, []byte(c.ID+" ")) {
					errs <- fmt.Errorf("%s %d: cubin of another variant", f, rows)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := 0; i < 200; i++ {
		rows, f := 128*(1+i%45), []string{"q4_0", "q8_0"}[i%2]
		a, _ := shared.Lookup("sm_90", f, rows, 4096*(1+i%2))
		b, _ := fresh.Lookup("sm_90", f, rows, 4096*(1+i%2))
		if a.ID != b.ID || a.Source != b.Source || a.Reason != b.Reason || !bytes.Equal(a.Cubin, b.Cubin) {
			t.Errorf("%s %d: concurrent %s %s, sequential %s %s", f, rows, a.Source, a.ID, b.Source, b.ID)
		}
	}
}

// TestKnobAThroughCache: a tuned int8-activation winner (knob a) comes back
// whole.
func TestKnobAThroughCache(t *testing.T) {
	r := rec(t, "sm_90", "q4_0", 4096, 4096, "r2f0u1s1w8a1", "tolerance")
	c := lookup(t, open(t, writeCache(t, r), nil), "sm_90", "q4_0", 4096, 4096)
	if c.Source != "tuned" || c.ID != "r2f0u1s1w8a1" || c.Params != r.Params {
		t.Errorf("lookup = %s %s %+v (%s); want tuned %s", c.Source, c.ID, c.Params, c.Reason, r.WinnerID)
	}
}

// TestKnobGThroughCache: knob g (row groups per block) of a tuned winner,
// of its exact alternative and of a forced variant comes back whole, with
// its cubin, and knob overrides keep it.
func TestKnobGThroughCache(t *testing.T) {
	tuned := rec(t, "sm_90", "q4_0", 4096, 4096, "r2f0u1s1w8g8", "exact")
	tol := withExact(t, rec(t, "sm_90", "q8_0", 4096, 4096, "r2f0u1s1w8g4a1", "tolerance"), "r4f0u1s1w8g128")
	plain := withExact(t, rec(t, "sm_90", "q8_0", 8192, 4096, "r2f0u1s1w8g16a1", "tolerance"), "r4f0u1s0w8")
	path := writeCache(t, tuned, tol, plain)
	strict := map[string]string{"GEMV_REQUIRE_EXACT": "1"}
	tests := []struct {
		name       string
		vars       map[string]string
		format     string
		rows       int
		source, id string
		cubin      []byte
	}{
		{"tuned", nil, "q4_0", 4096, "tuned", "r2f0u1s1w8g8", cubinFor(tuned)},
		// Nearest keeps the tuned grid: 4096 rows / 16 = 256 groups / g8 =
		// 32 blocks; 3000 rows = 188 groups over 32 blocks: g6, same cubin.
		{"nearest", nil, "q4_0", 3000, "nearest", "r2f0u1s1w8g6", cubinFor(tuned)},
		{"nearest far below", nil, "q4_0", 300, "nearest", "r2f0u1s1w8", cubinFor(tuned)},
		{"nearest far above", nil, "q4_0", 1 << 20, "nearest", "r2f0u1s1w8g255", cubinFor(tuned)},
		{"tuned tolerance", nil, "q8_0", 4096, "tuned", "r2f0u1s1w8g4a1", cubinFor(tol)},
		{"exact alternative with g", strict, "q8_0", 4096, "tuned", "r4f0u1s1w8g128", exactCubinFor(tol)},
		{"exact alternative without g", strict, "q8_0", 8192, "tuned", "r4f0u1s0w8", exactCubinFor(plain)},
		// 4096 / 32 = 128 groups / g128 = 1 block; 5000 rows = 157 groups.
		{"nearest exact alternative", strict, "q8_0", 5000, "nearest", "r4f0u1s1w8g157", exactCubinFor(tol)},
		{"forced", map[string]string{"GEMV_FORCE_VARIANT": "r2f0u1s0w8g64"}, "q4_0", 4096, "forced", "r2f0u1s0w8g64", nil},
		{"forced same id has the cubin", map[string]string{"GEMV_FORCE_VARIANT_Q4_0": "r2f0u1s1w8g8"}, "q4_0", 4096, "forced", "r2f0u1s1w8g8", cubinFor(tuned)},
		{"override keeps g", map[string]string{"GEMV_WARPS": "16"}, "q4_0", 4096, "forced", "r2f0u1s1w16g8", nil},
		// A staged variant is one kernel for every g: a forced other g (or
		// none) gets the stored cubin; an unstaged one with g does not.
		{"forced other g has the cubin", map[string]string{"GEMV_FORCE_VARIANT_Q4_0": "r2f0u1s1w8g3"}, "q4_0", 4096, "forced", "r2f0u1s1w8g3", cubinFor(tuned)},
		{"forced no g has the cubin", map[string]string{"GEMV_FORCE_VARIANT_Q4_0": "r2f0u1s1w8"}, "q4_0", 4096, "forced", "r2f0u1s1w8", cubinFor(tuned)},
		{"forced with override", map[string]string{"GEMV_FORCE_VARIANT": "r2f0u1s0w8g2", "GEMV_UNROLL": "4"}, "q4_0", 4096, "forced", "r2f0u4s0w8g2", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := lookup(t, open(t, path, tt.vars), "sm_90", tt.format, tt.rows, 4096)
			want, err := space.Parse(tt.id)
			if err != nil {
				t.Fatal(err)
			}
			if c.Source != tt.source || c.ID != tt.id || c.Params != want || c.Layout != want.L {
				t.Fatalf("%s %s %+v (%s); want %s %s", c.Source, c.ID, c.Params, c.Reason, tt.source, tt.id)
			}
			if !bytes.Equal(c.Cubin, tt.cubin) {
				t.Errorf("cubin %q; want %q", c.Cubin, tt.cubin)
			}
		})
	}
}
