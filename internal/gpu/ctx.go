package gpu

import (
	"fmt"
	"runtime"
	"unsafe"
)

// DevPtr is a device memory address.
type DevPtr uint64

// Module is a loaded cubin (CUmodule).
type Module uintptr

// Function is a kernel entry point in a Module (CUfunction).
type Function uintptr

// Ctx gives the raw driver operations inside Device.Do. Its methods run on
// the device's thread and must not be called after Do returns.
type Ctx struct {
	d    *driver
	info *Info
	live bool
	pin  runtime.Pinner // reused by Launch: a fresh Pinner costs a finalizer
}

// Info describes the device.
func (c *Ctx) Info() Info { return *c.info }

// ok reports ErrCtxOutsideDo when c is used after its Do call.
func (c *Ctx) ok() error {
	if !c.live {
		return ErrCtxOutsideDo
	}
	return nil
}

// do checks liveness, then calls s.
//
//go:uintptrescapes
func (c *Ctx) do(s sym, args ...uintptr) error {
	if !c.live {
		return ErrCtxOutsideDo
	}
	return c.d.check(s, s.call(args...))
}

// Alloc allocates bytes of device memory (cuMemAlloc_v2).
func (c *Ctx) Alloc(bytes int) (DevPtr, error) {
	if bytes <= 0 {
		return 0, fmt.Errorf("alloc %d bytes: want a positive size", bytes)
	}
	var p DevPtr
	if err := c.do(c.d.memAlloc, uintptr(unsafe.Pointer(&p)), uintptr(bytes)); err != nil {
		return 0, fmt.Errorf("alloc %d bytes: %w", bytes, err)
	}
	return p, nil
}

// Free releases memory from Alloc. Freeing 0 does nothing.
func (c *Ctx) Free(p DevPtr) error {
	if p == 0 {
		return c.ok()
	}
	return c.do(c.d.memFree, uintptr(p))
}

// CopyHtoD copies src to device address dst; it returns when src may be reused.
func (c *Ctx) CopyHtoD(dst DevPtr, src []byte) error {
	if len(src) == 0 {
		return c.ok()
	}
	return c.do(c.d.memcpyHtoD, uintptr(dst), uintptr(unsafe.Pointer(&src[0])), uintptr(len(src)))
}

// CopyDtoH copies len(dst) bytes from device address src into dst, after the
// work queued before it has finished.
func (c *Ctx) CopyDtoH(dst []byte, src DevPtr) error {
	if len(dst) == 0 {
		return c.ok()
	}
	return c.do(c.d.memcpyDtoH, uintptr(unsafe.Pointer(&dst[0])), uintptr(src), uintptr(len(dst)))
}

// CopyDtoD copies bytes between device addresses.
func (c *Ctx) CopyDtoD(dst, src DevPtr, bytes int) error {
	return c.do(c.d.memcpyDtoD, uintptr(dst), uintptr(src), uintptr(bytes))
}

// Memset sets bytes of device memory at p to b.
func (c *Ctx) Memset(p DevPtr, b byte, bytes int) error {
	return c.do(c.d.memsetD8, uintptr(p), uintptr(b), uintptr(bytes))
}

// LoadModule loads a cubin (or PTX) image.
func (c *Ctx) LoadModule(image []byte) (Module, error) {
	if len(image) == 0 {
		return 0, fmt.Errorf("load module: empty image")
	}
	var m Module
	if err := c.do(c.d.moduleLoadData, uintptr(unsafe.Pointer(&m)), uintptr(unsafe.Pointer(&image[0]))); err != nil {
		return 0, fmt.Errorf("load module: %w", err)
	}
	return m, nil
}

// UnloadModule unloads m; its functions become invalid.
func (c *Ctx) UnloadModule(m Module) error { return c.do(c.d.moduleUnload, uintptr(m)) }

// Function finds kernel name (an extern "C" name) in m.
func (c *Ctx) Function(m Module, name string) (Function, error) {
	var f Function
	cname := cString(name)
	if err := c.do(c.d.moduleGetFunction, uintptr(unsafe.Pointer(&f)), uintptr(m), uintptr(unsafe.Pointer(&cname[0]))); err != nil {
		return 0, fmt.Errorf("kernel %q: %w", name, err)
	}
	return f, nil
}

// FuncAttribute is a CUfunction_attribute.
type FuncAttribute int

// Function attributes (cuda.h values).
const (
	FuncMaxThreadsPerBlock FuncAttribute = 0
	FuncSharedBytes        FuncAttribute = 1 // static shared memory
	FuncConstBytes         FuncAttribute = 2
	FuncLocalBytes         FuncAttribute = 3 // per thread: spills and local arrays
	FuncNumRegs            FuncAttribute = 4
	FuncPTXVersion         FuncAttribute = 5
	FuncBinaryVersion      FuncAttribute = 6
	FuncMaxDynamicShared   FuncAttribute = 8
)

// FuncAttr reads one attribute of f.
func (c *Ctx) FuncAttr(f Function, a FuncAttribute) (int, error) {
	var v int32
	if err := c.do(c.d.funcGetAttribute, uintptr(unsafe.Pointer(&v)), uintptr(a), uintptr(f)); err != nil {
		return 0, fmt.Errorf("function attribute %d: %w", a, err)
	}
	return int(v), nil
}

// FuncInfo is what the compiler decided for a kernel.
type FuncInfo struct {
	Registers          int // per thread
	LocalBytes         int // per thread; non-zero means spills or local arrays
	SharedBytes        int // static shared memory per block
	ConstBytes         int
	MaxThreadsPerBlock int // after launch bounds and registers
	MaxDynamicShared   int
	BinaryVersion      int // e.g. 90
}

// FuncInfo reads the attributes of f that explain its occupancy.
func (c *Ctx) FuncInfo(f Function) (FuncInfo, error) {
	var fi FuncInfo
	for _, a := range []struct {
		attr FuncAttribute
		dst  *int
	}{
		{FuncNumRegs, &fi.Registers}, {FuncLocalBytes, &fi.LocalBytes},
		{FuncSharedBytes, &fi.SharedBytes}, {FuncConstBytes, &fi.ConstBytes},
		{FuncMaxThreadsPerBlock, &fi.MaxThreadsPerBlock},
		{FuncMaxDynamicShared, &fi.MaxDynamicShared}, {FuncBinaryVersion, &fi.BinaryVersion},
	} {
		v, err := c.FuncAttr(f, a.attr)
		if err != nil {
			return fi, err
		}
		*a.dst = v
	}
	return fi, nil
}

// SetMaxDynamicShared lets f use up to bytes of dynamic shared memory
// (needed above the 48 KB default, up to Info.SmemPerBlockOptin).
func (c *Ctx) SetMaxDynamicShared(f Function, bytes int) error {
	if err := c.do(c.d.funcSetAttribute, uintptr(f), uintptr(FuncMaxDynamicShared), uintptr(bytes)); err != nil {
		return fmt.Errorf("max dynamic shared memory %d bytes: %w", bytes, err)
	}
	return nil
}

// Occupancy returns how many blocks of blockSize threads using dynShared
// bytes of dynamic shared memory fit on one SM.
func (c *Ctx) Occupancy(f Function, blockSize, dynShared int) (int, error) {
	var n int32
	if err := c.do(c.d.occupancy, uintptr(unsafe.Pointer(&n)), uintptr(f), uintptr(blockSize), uintptr(dynShared)); err != nil {
		return 0, fmt.Errorf("occupancy at %d threads: %w", blockSize, err)
	}
	return int(n), nil
}

// Synchronize waits for all work in the context (cuCtxSynchronize), without
// a timeout; prefer WaitStream where a kernel might hang.
func (c *Ctx) Synchronize() error { return c.do(c.d.ctxSync) }
