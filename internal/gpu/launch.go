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
	// PDL launches with programmatic stream serialization (programmatic
	// dependent launch, sm_90+): the kernel's blocks may start while the
	// kernel before it in the stream still runs, once every block of that
	// one has called griddepcontrol.launch_dependents or exited; the kernel
	// must run griddepcontrol.wait before it touches memory the previous
	// kernel writes or reads. Captured into a graph, it becomes a
	// programmatic edge.
	PDL bool
}

// cuLaunchConfig mirrors CUlaunchConfig (cuda.h, CUDA 12.0+).
type cuLaunchConfig struct {
	grid     [3]uint32
	block    [3]uint32
	shared   uint32
	_        uint32
	stream   uintptr
	attrs    uintptr
	numAttrs uint32
	_        uint32
}

// cuLaunchAttribute mirrors CUlaunchAttribute: the attribute's id, padding
// to 8 bytes and the 64-byte CUlaunchAttributeValue union.
type cuLaunchAttribute struct {
	id    uint32
	_     uint32
	value [64]byte
}

// cuLaunchAttributeProgrammaticStreamSerialization is
// CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION; its value is the
// int programmaticStreamSerializationAllowed.
const cuLaunchAttributeProgrammaticStreamSerialization = 6

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
	if cfg.PDL {
		return c.launchPDL(f, g, b, cfg, params)
	}
	code := c.d.launchKernel.call(uintptr(f), uintptr(g[0]), uintptr(g[1]), uintptr(g[2]),
		uintptr(b[0]), uintptr(b[1]), uintptr(b[2]), uintptr(cfg.SharedBytes), uintptr(cfg.Stream), params, 0)
	c.pin.Unpin()
	return c.d.check(c.d.launchKernel, code)
}

// launchPDL is Launch through cuLaunchKernelEx with programmatic stream
// serialization; params is already pinned.
func (c *Ctx) launchPDL(f Function, g, b [3]uint32, cfg LaunchConfig, params uintptr) error {
	defer c.pin.Unpin()
	if c.d.launchKernelEx.addr == 0 {
		return fmt.Errorf("%w: programmatic dependent launch needs cuLaunchKernelEx (CUDA 12.0 or newer driver)", ErrUnsupported)
	}
	attr := &cuLaunchAttribute{id: cuLaunchAttributeProgrammaticStreamSerialization}
	attr.value[0] = 1 // int 1, little-endian
	lc := &cuLaunchConfig{grid: g, block: b, shared: cfg.SharedBytes, stream: uintptr(cfg.Stream), attrs: uintptr(unsafe.Pointer(attr)), numAttrs: 1}
	c.pin.Pin(attr)
	c.pin.Pin(lc)
	code := c.d.launchKernelEx.call(uintptr(unsafe.Pointer(lc)), uintptr(f), params, 0)
	return c.d.check(c.d.launchKernelEx, code)
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
