package gpu

import (
	"time"
	"unsafe"
)

// The methods below wrap one Ctx operation each in a Do call: convenient
// for setup, too slow for timing loops (a channel round trip per call).

// Alloc allocates bytes of device memory.
func (dev *Device) Alloc(bytes int) (p DevPtr, err error) {
	err = dev.Do(func(c *Ctx) error { p, err = c.Alloc(bytes); return err })
	return p, err
}

// Free releases memory from Alloc.
func (dev *Device) Free(p DevPtr) error {
	return dev.Do(func(c *Ctx) error { return c.Free(p) })
}

// CopyHtoD copies src to device address dst.
func (dev *Device) CopyHtoD(dst DevPtr, src []byte) error {
	return dev.Do(func(c *Ctx) error { return c.CopyHtoD(dst, src) })
}

// CopyDtoH copies len(dst) bytes from device address src.
func (dev *Device) CopyDtoH(dst []byte, src DevPtr) error {
	return dev.Do(func(c *Ctx) error { return c.CopyDtoH(dst, src) })
}

// LoadModule loads a cubin and finds kernel name in it.
func (dev *Device) LoadModule(cubin []byte, name string) (m Module, f Function, err error) {
	err = dev.Do(func(c *Ctx) error {
		if m, err = c.LoadModule(cubin); err != nil {
			return err
		}
		if f, err = c.Function(m, name); err != nil {
			c.UnloadModule(m)
			return err
		}
		return nil
	})
	return m, f, err
}

// Wait waits for stream s (0 = the default stream), returning ErrTimeout
// (wrapped) when timeout passes first.
func (dev *Device) Wait(s Stream, timeout time.Duration) error {
	return dev.Do(func(c *Ctx) error { return c.WaitStream(s, timeout) })
}

// Number is an element type that Bytes can view as raw bytes.
type Number interface {
	~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~uint32 | ~int64 | ~uint64 | ~float32 | ~float64
}

// Bytes views s as its raw bytes (no copy), for CopyHtoD and CopyDtoH.
func Bytes[T Number](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(zero)))
}
