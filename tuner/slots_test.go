package tuner

import (
	"context"
	"sync"
	"testing"
	"time"
)

// With every slot taken, waiters are served lowest priority first, in
// arrival order within one; a waiter whose context ends leaves the queue
// without taking a slot.
func TestSlotsPriority(t *testing.T) {
	s := newSlots(1)
	ctx := context.Background()
	if err := s.acquire(ctx, 5); err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	waitFor := func(n int) { // until n waiters are queued
		for {
			s.mu.Lock()
			q := 0
			for _, w := range s.waiting {
				q += len(w)
			}
			s.mu.Unlock()
			if q == n {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	for i, prio := range []int{2, 1, 2, 0} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.acquire(ctx, prio); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, 10*prio+i)
			mu.Unlock()
			s.release()
		}()
		waitFor(i + 1)
	}
	cancelled, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- s.acquire(cancelled, 0) }()
	waitFor(5)
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a cancelled acquire took a slot")
	}
	s.release()
	wg.Wait()
	want := []int{3, 11, 20, 22} // prio 0, 1, then 2 in arrival order
	if len(order) != len(want) {
		t.Fatalf("served %v, want %v", order, want)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("served %v, want %v", order, want)
		}
	}
	if s.free != 1 || len(s.waiting) != 0 {
		t.Errorf("after all: %d free, %d queues", s.free, len(s.waiting))
	}
}
