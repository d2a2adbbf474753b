package gemvtune_test

import (
	"path/filepath"
	"testing"

	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/internal/cachetest"
)

// rec returns a current, valid record whose winner is id, tuned on an
// H200, of class class.
func rec(t testing.TB, arch, format string, rows, cols int, id string, class string) cache.Record {
	t.Helper()
	r := cachetest.Record(t, arch, "NVIDIA H200", format, rows, cols, id)
	r.Class = class
	return r
}

// cubinFor is the fake cubin stored with a record in these tests.
func cubinFor(r cache.Record) []byte { return cachetest.Cubin(r) }

// writeCache stores recs in a new cache file, each with cubinFor and, when
// it has an exact alternative that did not keep stock, exactCubinFor.
func writeCache(t testing.TB, recs ...cache.Record) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tune.db")
	db, err := cache.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, r := range recs {
		var xc []byte
		if r.Exact != nil && !r.Exact.Kept {
			xc = exactCubinFor(r)
		}
		if err := db.Put(r, cubinFor(r), xc); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// env returns a LookupEnv over m.
func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}
