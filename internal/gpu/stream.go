package gpu

import (
	"fmt"
	"math"
	"time"
	"unsafe"
)

// Stream is a CUDA stream; 0 is the legacy default stream.
type Stream uintptr

// Event is a CUDA event.
type Event uintptr

// Graph is a captured CUDA graph.
type Graph uintptr

// GraphExec is an instantiated graph, ready to launch.
type GraphExec uintptr

// NewStream creates a stream that does not synchronise with the default
// stream (CU_STREAM_NON_BLOCKING). Graph capture needs such a stream.
func (c *Ctx) NewStream() (Stream, error) {
	var s Stream
	if err := c.do(c.d.streamCreate, uintptr(unsafe.Pointer(&s)), 1); err != nil {
		return 0, err
	}
	return s, nil
}

// DestroyStream destroys s once its work is done.
func (c *Ctx) DestroyStream(s Stream) error { return c.do(c.d.streamDestroy, uintptr(s)) }

// SyncStream waits for s without a timeout.
func (c *Ctx) SyncStream(s Stream) error { return c.do(c.d.streamSync, uintptr(s)) }

// NewEvent creates an event that records time (default flags).
func (c *Ctx) NewEvent() (Event, error) {
	var e Event
	if err := c.do(c.d.eventCreate, uintptr(unsafe.Pointer(&e)), 0); err != nil {
		return 0, err
	}
	return e, nil
}

// DestroyEvent destroys e.
func (c *Ctx) DestroyEvent(e Event) error { return c.do(c.d.eventDestroy, uintptr(e)) }

// Record enqueues e on s.
func (c *Ctx) Record(e Event, s Stream) error { return c.do(c.d.eventRecord, uintptr(e), uintptr(s)) }

// SyncEvent waits for e without a timeout.
func (c *Ctx) SyncEvent(e Event) error { return c.do(c.d.eventSync, uintptr(e)) }

// Elapsed returns the GPU time between two recorded, completed events
// (resolution about 0.5 µs).
func (c *Ctx) Elapsed(start, end Event) (time.Duration, error) {
	var ms float32
	if err := c.do(c.d.eventElapsed, uintptr(unsafe.Pointer(&ms)), uintptr(start), uintptr(end)); err != nil {
		return 0, err
	}
	return time.Duration(math.Round(float64(ms) * 1e6)), nil
}

// WaitStream waits until the work queued on s has finished, polling
// cuStreamQuery. It returns ErrTimeout (wrapped) when timeout passes first;
// the work keeps running and a later wait can collect it.
func (c *Ctx) WaitStream(s Stream, timeout time.Duration) error {
	return c.poll(c.d.streamQuery, uintptr(s), timeout)
}

// WaitEvent waits until e has completed, polling cuEventQuery, with the same
// timeout rule as WaitStream.
func (c *Ctx) WaitEvent(e Event, timeout time.Duration) error {
	return c.poll(c.d.eventQuery, uintptr(e), timeout)
}

// poll calls query(h) until it stops answering CUDA_ERROR_NOT_READY.
func (c *Ctx) poll(query sym, h uintptr, timeout time.Duration) error {
	start := time.Now()
	pause := time.Microsecond
	for {
		err := c.do(query, h)
		ce, notReady := err.(*CUDAError)
		if err == nil || !notReady || ce.Code != CodeNotReady {
			return err
		}
		if waited := time.Since(start); waited >= timeout {
			return fmt.Errorf("%w after %v", ErrTimeout, waited.Round(time.Millisecond))
		}
		time.Sleep(pause) // the goroutine keeps its locked thread while asleep
		if pause < time.Millisecond {
			pause *= 2
		}
	}
}

// Stream capture modes (CUstreamCaptureMode).
const captureThreadLocal = 1

// BeginCapture starts recording the work enqueued on s into a graph instead
// of running it. s must not be the default stream.
func (c *Ctx) BeginCapture(s Stream) error {
	return c.do(c.d.beginCapture, uintptr(s), captureThreadLocal)
}

// EndCapture stops recording on s and returns the graph.
func (c *Ctx) EndCapture(s Stream) (Graph, error) {
	var g Graph
	if err := c.do(c.d.endCapture, uintptr(s), uintptr(unsafe.Pointer(&g))); err != nil {
		return 0, err
	}
	return g, nil
}

// Instantiate makes g launchable.
func (c *Ctx) Instantiate(g Graph) (GraphExec, error) {
	var e GraphExec
	if err := c.do(c.d.graphInstantiate, uintptr(unsafe.Pointer(&e)), uintptr(g), 0); err != nil {
		return 0, err
	}
	return e, nil
}

// LaunchGraph enqueues the whole graph on s.
func (c *Ctx) LaunchGraph(e GraphExec, s Stream) error {
	return c.do(c.d.graphLaunch, uintptr(e), uintptr(s))
}

// DestroyGraphExec frees an instantiated graph.
func (c *Ctx) DestroyGraphExec(e GraphExec) error { return c.do(c.d.graphExecDestroy, uintptr(e)) }

// DestroyGraph frees a captured graph.
func (c *Ctx) DestroyGraph(g Graph) error { return c.do(c.d.graphDestroy, uintptr(g)) }
