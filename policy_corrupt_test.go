package gemvtune_test

import (
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune"

	bolt "go.etcd.io/bbolt"
)

// TestUnreadableEntry: one garbage entry gives stock with corrupt-cache for
// its shape only; the rest of the cache still works.
func TestUnreadableEntry(t *testing.T) {
	path := writeCache(t, rec(t, "sm_90", "q4_0", 4096, 4096, "r2f0u1s0w8", "exact"),
		rec(t, "sm_90", "q4_0", 1024, 4096, "r3f0u1s0w8", "exact"))
	b, err := bolt.Open(path, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = b.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket([]byte("sm_90")).Bucket([]byte("h200")).Bucket([]byte("q4_0")).Put([]byte("1024x4096"), []byte(`{"schema":1,"rows":"garbage"`)); err != nil {
			return err
		}
		return tx.Bucket([]byte("_meta")).Put([]byte("index"), []byte("garbage index"))
	})
	b.Close()
	if err != nil {
		t.Fatal(err)
	}
	p := open(t, path, nil)
	if p.CacheErr == nil {
		t.Error("CacheErr is nil; want the skipped entry")
	}
	if c := lookup(t, p, "sm_90", "q4_0", 1024, 4096); c.Source != "corrupt-cache" || c.ID != "v1" {
		t.Errorf("garbage entry: %s %s", c.Source, c.ID)
	}
	if c := lookup(t, p, "sm_90", "q4_0", 4096, 4096); c.Source != "tuned" {
		t.Errorf("good entry beside a garbage one: %s", c.Source)
	}
}

// TestBusyCacheIsNotCorrupt: a writer that holds the cache past Open's
// wait does not stop an engine: it reads a copy of the file, says so in
// Notice, and gets the tuned choice (busy-cache, stock, only when the copy
// does not check out).
func TestBusyCacheIsNotCorrupt(t *testing.T) {
	path := writeCache(t, rec(t, "sm_90", "q4_0", 4096, 4096, "r2f0u1s0w8", "exact"))
	b, err := bolt.Open(path, 0o644, nil) // holds bbolt's exclusive lock until closed
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	p, err := gemvtune.Open(&gemvtune.Options{CachePath: path, LookupEnv: env(nil), ContinueOnCacheError: true})
	if err != nil {
		t.Fatalf("an engine did not start beside a busy cache: %v", err)
	}
	if c := lookup(t, p, "sm_90", "q4_0", 4096, 4096); c.Source != "tuned" || c.ID != "r2f0u1s0w8" || c.Cubin == nil {
		t.Errorf("busy cache: %s %s (%s), cubin %v", c.Source, c.ID, c.Reason, c.Cubin != nil)
	}
	if !strings.Contains(p.Notice, "held by a writer") || p.CacheErr != nil {
		t.Errorf("busy cache: notice %q, error %v", p.Notice, p.CacheErr)
	}
}
