package tuner

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gemvtune/gemvtune/internal/lockfile"
)

func TestGPULock(t *testing.T) {
	dir := t.TempDir()
	lockDir = func() string { return dir }
	const uuid = "GPU-00000000-1111-2222-3333-444444444444"
	first, err := lockGPU(context.Background(), uuid, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockGPU(context.Background(), uuid, false, nil); !errors.Is(err, ErrGPUBusy) {
		t.Fatalf("second tuner got %v, want ErrGPUBusy", err)
	}
	waited := make(chan int, 1)
	got := make(chan error, 1)
	go func() {
		l, err := lockGPU(context.Background(), uuid, true, func(pid int) { waited <- pid })
		l.unlock()
		got <- err
	}()
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("a waiting tuner was not told it waits")
	}
	// A waiter whose run is interrupted stops waiting.
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() {
		_, err := lockGPU(ctx, uuid, true, nil)
		stopped <- err
	}()
	cancel()
	select {
	case err := <-stopped:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("interrupted waiter got %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("an interrupted waiter kept waiting")
	}
	first.unlock()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting tuner did not get the lock after release")
	}
}

// TestGPULockIsPerMachine: the GPU lock's folder does not depend on the
// user's cache folder, so two users (or two HOMEs) meet at one lock.
func TestGPULockIsPerMachine(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	a := lockfile.MachineDir()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	if b := lockfile.MachineDir(); a != b {
		t.Errorf("lock folder moved with HOME: %q, %q", a, b)
	}
	if a == "" {
		t.Skip("no per-machine lock folder on this machine")
	}
	if strings.Contains(a, os.Getenv("HOME")) {
		t.Errorf("lock folder %q is under HOME", a)
	}
}
