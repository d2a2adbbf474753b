package tuner

import (
	"context"
	"sync"
)

// slots bounds how many compiles run at once across every format's build,
// and serves a waiting compile of a lower priority value (an earlier
// format) before any of a higher one, first come first served within one.
// Every format builds at once, so the cores one build leaves idle (its
// slowest programs, its last small rounds of launch-bounds floors) compile
// the next format's programs, while the earliest format, whose jobs the
// GPUs wait for, still finishes first.
type slots struct {
	mu      sync.Mutex
	free    int
	waiting map[int][]chan struct{} // by priority; each channel has room for its grant
}

func newSlots(n int) *slots {
	return &slots{free: max(1, n), waiting: map[int][]chan struct{}{}}
}

// acquire takes a slot for a compile of priority prio, waiting while none
// is free or ctx is done.
func (s *slots) acquire(ctx context.Context, prio int) error {
	s.mu.Lock()
	if s.free > 0 {
		s.free--
		s.mu.Unlock()
		return nil
	}
	grant := make(chan struct{}, 1)
	s.waiting[prio] = append(s.waiting[prio], grant)
	s.mu.Unlock()
	select {
	case <-grant:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		q := s.waiting[prio]
		for i, g := range q {
			if g == grant {
				s.waiting[prio] = append(q[:i:i], q[i+1:]...)
				s.mu.Unlock()
				return ctx.Err()
			}
		}
		s.mu.Unlock()
		s.release() // granted as ctx ended: pass it on
		return ctx.Err()
	}
}

// release returns a slot: to the first waiter of the lowest priority
// waiting, else to the pool.
func (s *slots) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	best, found := 0, false
	for p, q := range s.waiting {
		if len(q) > 0 && (!found || p < best) {
			best, found = p, true
		}
	}
	if !found {
		s.free++
		return
	}
	q := s.waiting[best]
	q[0] <- struct{}{}
	if len(q) == 1 {
		delete(s.waiting, best)
	} else {
		s.waiting[best] = q[1:]
	}
}
