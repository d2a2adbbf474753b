package gpu

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// Device is one GPU with its primary context, current on one OS thread.
//
// A CUDA context belongs to an OS thread: without runtime.LockOSThread a
// goroutine migrates and cuMemAlloc fails with CUDA_ERROR_INVALID_CONTEXT
// (201). So a Device owns one goroutine that locked its thread, ran cuInit,
// retained the primary context and made it current; every driver call that
// needs the context runs there, through Do.
type Device struct {
	info Info
	reqs chan request

	mu     sync.Mutex // guards closed
	closed bool
	done   chan struct{} // closed when the goroutine has released the context
}

// request is one Do call.
type request struct {
	fn    func(*Ctx) error
	reply chan result
}

// result is what fn returned, or the value it panicked with.
type result struct {
	err      error
	panicked bool
	panicVal any
}

// Open starts the goroutine of device ordinal (0 for the first GPU) and
// makes its primary context current there. It returns ErrNoDriver or
// ErrNoDevice (wrapped) on a machine without a GPU.
func Open(ordinal int) (*Device, error) {
	n, err := Count()
	if err != nil {
		return nil, err
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("device %d: out of range (found %d CUDA devices)", ordinal, n)
	}
	dev := &Device{reqs: make(chan request), done: make(chan struct{})}
	ready := make(chan error, 1)
	go dev.loop(theDriver, ordinal, ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return dev, nil
}

// loop is the device goroutine: it never leaves its OS thread, and the
// thread ends with it.
func (dev *Device) loop(d *driver, ordinal int, ready chan<- error) {
	runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
	defer close(dev.done)
	info, err := deviceInfo(d, ordinal)
	if err != nil {
		ready <- err
		return
	}
	var cudev int32
	var ctx uintptr
	if err := d.do(d.deviceGet, uintptr(unsafe.Pointer(&cudev)), uintptr(ordinal)); err != nil {
		ready <- fmt.Errorf("device %d: %w", ordinal, err)
		return
	}
	if err := d.do(d.primaryCtxRetain, uintptr(unsafe.Pointer(&ctx)), uintptr(cudev)); err != nil {
		ready <- fmt.Errorf("device %d: %w", ordinal, err)
		return
	}
	defer d.primaryCtxRelease.call(uintptr(cudev))
	if err := d.do(d.ctxSetCurrent, ctx); err != nil {
		ready <- fmt.Errorf("device %d: %w", ordinal, err)
		return
	}
	dev.info = info
	ready <- nil
	c := &Ctx{d: d, info: &dev.info}
	for req := range dev.reqs {
		c.run(req)
	}
}

// run calls req.fn with c live and sends its result. A panic is sent back
// to be re-raised by the caller. If fn calls runtime.Goexit (t.Fatal inside
// Do), the caller gets errGoexit and the device goroutine ends with it.
func (c *Ctx) run(req request) {
	c.live = true
	returned := false
	defer func() {
		c.live = false
		if v := recover(); v != nil {
			req.reply <- result{panicked: true, panicVal: v}
		} else if !returned {
			req.reply <- result{err: errGoexit}
		}
	}()
	err := req.fn(c)
	returned = true
	req.reply <- result{err: err}
}

// errGoexit is returned by Do when fn called runtime.Goexit.
var errGoexit = errors.New("Device.Do: fn called runtime.Goexit (t.Fatal inside Do?); the device is closed")

// Info describes the device.
func (dev *Device) Info() Info { return dev.info }

// Do runs fn on the device's goroutine, where the context is current, and
// returns its error. A panic in fn is re-raised in the caller. Calls from
// several goroutines run one at a time. fn must not call Do or Close on the
// same device (it would wait for itself), nor t.Fatal (it ends the device
// goroutine; Do then returns an error), and c is valid only until fn returns.
func (dev *Device) Do(fn func(c *Ctx) error) error {
	dev.mu.Lock()
	if dev.closed {
		dev.mu.Unlock()
		return ErrClosed
	}
	reply := make(chan result, 1)
	select {
	case dev.reqs <- request{fn: fn, reply: reply}:
	case <-dev.done: // the goroutine ended (an earlier fn called Goexit)
		dev.mu.Unlock()
		return ErrClosed
	}
	dev.mu.Unlock()
	r := <-reply // always sent, even on panic or Goexit
	if r.panicked {
		panic(r.panicVal)
	}
	return r.err
}

// Close releases the primary context and ends the goroutine. Work still
// queued on the GPU is waited for by the driver. Later Do calls return
// ErrClosed.
func (dev *Device) Close() error {
	dev.mu.Lock()
	if dev.closed {
		dev.mu.Unlock()
		return nil
	}
	dev.closed = true
	close(dev.reqs)
	dev.mu.Unlock()
	<-dev.done
	return nil
}
