package gemvtune_test

import (
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

// writeCache stores recs in a new cache file (cachetest.Write).
func writeCache(t testing.TB, recs ...cache.Record) string { return cachetest.Write(t, recs...) }

// env returns a LookupEnv over m.
func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}
