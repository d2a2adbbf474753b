package gpu

import (
	"fmt"
	"math"
	"unsafe"
)

// Args is a packed kernel argument list, built once with NewArgs and reused
// for any number of launches.
//
// Each argument occupies one 8-byte slot holding its value; the second half
// of buf holds the slot addresses, which is the kernelParams array
// cuLaunchKernel reads. The buffer is pinned for the duration of each launch,
// so C never reads unpinned Go memory.
type Args struct {
	buf []uint64 // n values, then n addresses of those values
	n   int
}

// NewArgs packs kernel arguments. Each value must be a DevPtr, int32, uint32
// or float32, in the kernel's parameter order.
func NewArgs(vals ...any) (*Args, error) {
	a := &Args{buf: make([]uint64, 2*len(vals)), n: len(vals)}
	for i, v := range vals {
		switch x := v.(type) {
		case DevPtr:
			a.buf[i] = uint64(x)
		case int32:
			a.buf[i] = uint64(uint32(x))
		case uint32:
			a.buf[i] = uint64(x)
		case float32:
			a.buf[i] = uint64(math.Float32bits(x))
		default:
			return nil, fmt.Errorf("kernel argument %d: %T not supported (want gpu.DevPtr, int32, uint32 or float32)", i, v)
		}
	}
	return a, nil
}

// Len returns the number of arguments.
func (a *Args) Len() int { return a.n }

// Set replaces argument i, which must keep its type's size (any of the
// accepted types fits).
func (a *Args) Set(i int, v any) error {
	one, err := NewArgs(v)
	if err != nil {
		return err
	}
	if i < 0 || i >= a.n {
		return fmt.Errorf("kernel argument %d: out of range (have %d)", i, a.n)
	}
	a.buf[i] = one.buf[0]
	return nil
}

// slot returns the raw 8 bytes of argument i (for tests).
func (a *Args) slot(i int) uint64 { return a.buf[i] }

// LaunchConfig is a launch geometry; its fields match variants.Launch.
type LaunchConfig struct {
	Grid        [3]uint32
	Block       [3]uint32
	SharedBytes uint32 // dynamic shared memory per block
	Stream      Stream // 0 = the legacy default stream
}

// Launch enqueues f with cfg and args; it does not wait. A nil args means a
// kernel without parameters. Any zero grid or block dimension counts as 1.
func (c *Ctx) Launch(f Function, cfg LaunchConfig, args *Args) error {
	if !c.live {
		return ErrCtxOutsideDo
	}
	g, b := dims(cfg.Grid), dims(cfg.Block)
	var params uintptr
	if args != nil && args.n > 0 {
		c.pin.Pin(&args.buf[0])
		for i := 0; i < args.n; i++ {
			args.buf[args.n+i] = uint64(uintptr(unsafe.Pointer(&args.buf[i])))
		}
		params = uintptr(unsafe.Pointer(&args.buf[args.n]))
	}
	code := c.d.launchKernel.call(uintptr(f), uintptr(g[0]), uintptr(g[1]), uintptr(g[2]),
		uintptr(b[0]), uintptr(b[1]), uintptr(b[2]), uintptr(cfg.SharedBytes), uintptr(cfg.Stream), params, 0)
	c.pin.Unpin()
	return c.d.check(c.d.launchKernel, code)
}

// dims replaces zero dimensions by 1.
func dims(d [3]uint32) [3]uint32 {
	for i := range d {
		if d[i] == 0 {
			d[i] = 1
		}
	}
	return d
}
