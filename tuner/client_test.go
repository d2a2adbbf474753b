package tuner

import (
	"errors"
	"testing"
	"time"
)

// fakeWorkerEnv makes the test binary, started as a worker, misbehave.
const fakeWorkerEnv = "GEMVTUNE_FAKE_WORKER"

// TestWorkerWatchdog checks that a worker that hangs is killed after the
// timeout and reported as hung, and one that dies as lost (not hung): the
// tuner marks the candidate "timeout" or "fault" and starts a new worker.
func TestWorkerWatchdog(t *testing.T) {
	for _, tt := range []struct {
		mode string
		hung bool
	}{{"hang", true}, {"crash", false}} {
		t.Run(tt.mode, func(t *testing.T) {
			t.Setenv(fakeWorkerEnv, tt.mode)
			p, err := startWorker()
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = p.call(request{Op: opInit}, 300*time.Millisecond)
			if !errors.Is(err, errWorkerLost) || errors.Is(err, errWorkerHung) != tt.hung {
				t.Fatalf("call = %v; want lost, hung=%v", err, tt.hung)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %v to notice", took)
			}
			select {
			case <-p.dead:
			case <-time.After(5 * time.Second):
				t.Error("the worker process is still running")
			}
		})
	}
}

// TestWorkerWrap checks that the worker starts under the command in
// WorkerWrapEnv: the wrapper here sets the fake-crash mode, which only a
// worker started through it sees (a real worker would answer).
func TestWorkerWrap(t *testing.T) {
	t.Setenv(WorkerWrapEnv, "env "+fakeWorkerEnv+"=crash")
	p, err := startWorker()
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.call(request{Op: opInit}, 5*time.Second)
	if !errors.Is(err, errWorkerLost) || errors.Is(err, errWorkerHung) {
		t.Fatalf("call = %v; want the wrapped worker's crash (lost, not hung)", err)
	}
}
