package cache_test

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemvtune/gemvtune/cache"
)

// TestConcurrentReadersOneWriter runs one writer and several readers (each
// opening read-only, reading and closing, as engines do) at once.
func TestConcurrentReadersOneWriter(t *testing.T) {
	w, path := openWriter(t)
	rng := newRNG(t)
	const n = 40
	var wg sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan error, 100)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := 0
			for {
				select {
				case <-done:
					return
				default:
				}
				r, err := cache.Open(path, &cache.Options{ReadOnly: true, Timeout: 5 * time.Second})
				if err != nil {
					errs <- fmt.Errorf("reader open: %w", err)
					return
				}
				s, err := r.Snapshot(true)
				r.Close()
				if err != nil || len(s.Bad) > 0 {
					errs <- fmt.Errorf("reader snapshot: %v, bad %v", err, s)
					return
				}
				if len(s.Summaries) < last {
					errs <- fmt.Errorf("reader saw %d records after %d", len(s.Summaries), last)
					return
				}
				last = len(s.Summaries)
				// Engines read once at start-up; back-to-back shared locks
				// with no gap would starve the writer (flock has no writer
				// preference).
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	for i := 1; i <= n; i++ {
		if err := w.Put(randomRecord(rng, "sm_90", "q4_0", 32*i, 4096), []byte(strings.Repeat("c", 100*i))); err != nil {
			t.Errorf("Put %d: %v", i, err)
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	recs, err := w.All("")
	if err != nil || len(recs) != n {
		t.Errorf("All = %d records, %v; want %d", len(recs), err, n)
	}
}

const helperEnv = "GEMVTUNE_CACHE_TEST_WRITER"

// TestMain lets the test binary act as a writer process that a test kills.
func TestMain(m *testing.M) {
	if path := os.Getenv(helperEnv); path != "" {
		os.Exit(writerProcess(path))
	}
	os.Exit(m.Run())
}

// writerProcess puts records forever, printing "put N" after each commit.
func writerProcess(path string) int {
	db, err := cache.Open(path, nil)
	if err != nil {
		fmt.Println("open:", err)
		return 1
	}
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), 7))
	for i := 1; ; i++ {
		rec := randomRecord(rng, "sm_90", "q4_0", 32*i, 4096)
		if err := db.Put(rec, []byte(strings.Repeat("cubin", 2000+i))); err != nil {
			fmt.Println("put:", err)
			return 1
		}
		fmt.Printf("put %d\n", i)
	}
}

// TestKilledWriter kills a writing process with SIGKILL mid-run: the cache
// stays readable, holds every entry the writer finished, and a new writer
// gets the lock.
func TestKilledWriter(t *testing.T) {
	path := t.TempDir() + "/tune.db"
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	finished := 0
	for finished < 25 && sc.Scan() {
		line := sc.Text()
		n, err := strconv.Atoi(strings.TrimPrefix(line, "put "))
		if err != nil {
			t.Fatalf("writer said %q", line)
		}
		finished = n
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no deferred code runs
		t.Fatal(err)
	}
	for sc.Scan() { // lines printed before the kill are finished entries too
		if n, err := strconv.Atoi(strings.TrimPrefix(sc.Text(), "put ")); err == nil {
			finished = n
		}
	}
	_ = cmd.Wait()
	if finished < 25 {
		t.Fatalf("writer finished only %d entries", finished)
	}
	r, err := cache.Open(path, &cache.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("Open after kill: %v", err)
	}
	recs, err := r.All("")
	if err != nil {
		t.Fatalf("All after kill: %v", err)
	}
	if len(recs) < finished || len(recs) > finished+1 {
		t.Errorf("%d records after the writer finished %d", len(recs), finished)
	}
	for i := 1; i <= finished; i++ {
		k := cache.Key{Arch: "sm_90", Format: "q4_0", Rows: 32 * i, Cols: 4096}
		rec, err := r.Get(k)
		if err != nil {
			t.Errorf("finished entry %s: %v", k, err)
			continue
		}
		if _, err := r.Cubin(rec.CubinHash); err != nil {
			t.Errorf("cubin of finished entry %s: %v", k, err)
		}
	}
	w, err := cache.Open(path, &cache.Options{Timeout: time.Second})
	if err != nil {
		t.Fatalf("new writer after kill: %v", err)
	}
	defer w.Close()
	if err := w.Put(randomRecord(newRNG(t), "sm_90", "q8_0", 64, 64), nil); err != nil {
		t.Errorf("Put after kill: %v", err)
	}
}
