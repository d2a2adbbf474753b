package tuner

import (
	"errors"
	"testing"
	"time"
)

func TestGPULock(t *testing.T) {
	dir := t.TempDir()
	lockDir = func() string { return dir }
	const uuid = "GPU-00000000-1111-2222-3333-444444444444"
	first, err := lockGPU(uuid, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockGPU(uuid, false, nil); !errors.Is(err, ErrGPUBusy) {
		t.Fatalf("second tuner got %v, want ErrGPUBusy", err)
	}
	waited := make(chan int, 1)
	got := make(chan error, 1)
	go func() {
		l, err := lockGPU(uuid, true, func(pid int) { waited <- pid })
		l.unlock()
		got <- err
	}()
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("a waiting tuner was not told it waits")
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
