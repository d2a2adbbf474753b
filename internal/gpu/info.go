package gpu

import (
	"fmt"
	"unsafe"

	"github.com/gemvtune/gemvtune/space"
)

// Info describes one GPU, read from the driver's device attributes.
type Info struct {
	Ordinal            int
	Name               string
	UUID               string // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as NVML writes it
	Arch               Arch
	SMs                int
	L2Bytes            int
	RegsPerSM          int
	RegsPerBlock       int
	SmemPerSM          int // bytes
	SmemPerBlock       int // bytes, without opt-in
	SmemPerBlockOptin  int // bytes, with cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)
	MaxThreadsPerSM    int
	MaxThreadsPerBlock int
	MaxBlocksPerSM     int
	WarpSize           int
	ClockKHz           int // SM clock
	MemClockKHz        int // memory clock
	MemBusBits         int // memory bus width
	TotalMem           uint64
}

// Limits are the resource limits that decide which variants can launch
// on this device: its own attributes, and the 255 registers per thread
// every arch allows (space.LimitsFor's table, for planning without one).
func (i Info) Limits() space.Limits {
	return space.Limits{Arch: i.Arch.String(), RegsPerSM: i.RegsPerSM, MaxRegsPerThread: 255,
		MaxThreadsPerSM: i.MaxThreadsPerSM, MaxThreadsPerBlock: i.MaxThreadsPerBlock,
		MaxBlocksPerSM: i.MaxBlocksPerSM, SmemPerSM: i.SmemPerSM,
		SmemPerBlockDefault: i.SmemPerBlock, SmemPerBlockOptin: i.SmemPerBlockOptin}
}

// PeakGBps is the theoretical DRAM bandwidth from the attributes:
// 2 transfers per memory clock × bus width. Zero when the driver does not
// report the clocks.
func (i Info) PeakGBps() float64 {
	return 2 * float64(i.MemClockKHz) * 1e3 * float64(i.MemBusBits) / 8 / 1e9
}

// String reads "NVIDIA H200 (sm_90, 132 SMs, 60 MiB L2, 141 GiB)".
func (i Info) String() string {
	return fmt.Sprintf("%s (%s, %d SMs, %d MiB L2, %d GiB)", i.Name, i.Arch, i.SMs, i.L2Bytes>>20, i.TotalMem>>30)
}

// CUdevice_attribute values (cuda.h).
const (
	attrMaxThreadsPerBlock = 1
	attrSmemPerBlock       = 8
	attrWarpSize           = 10
	attrRegsPerBlock       = 12
	attrClockRate          = 13
	attrSMCount            = 16
	attrMemClockRate       = 36
	attrMemBusWidth        = 37
	attrL2Size             = 38
	attrMaxThreadsPerSM    = 39
	attrCCMajor            = 75
	attrCCMinor            = 76
	attrSmemPerSM          = 81
	attrRegsPerSM          = 82
	attrSmemPerBlockOptin  = 97
	attrMaxBlocksPerSM     = 106
)

// Count returns the number of CUDA devices. It returns ErrNoDriver or
// ErrNoDevice (wrapped) when there is none.
func Count() (int, error) {
	d, err := initDriver()
	if err != nil {
		return 0, err
	}
	var n int32
	if err := d.do(d.deviceGetCount, uintptr(unsafe.Pointer(&n))); err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, ErrNoDevice
	}
	return int(n), nil
}

// Probe describes every CUDA device without creating a context.
func Probe() ([]Info, error) {
	n, err := Count()
	if err != nil {
		return nil, err
	}
	infos := make([]Info, n)
	for i := range infos {
		if infos[i], err = deviceInfo(theDriver, i); err != nil {
			return nil, err
		}
	}
	return infos, nil
}

// deviceInfo reads the attributes of one device.
func deviceInfo(d *driver, ordinal int) (Info, error) {
	info := Info{Ordinal: ordinal}
	var dev int32
	if err := d.do(d.deviceGet, uintptr(unsafe.Pointer(&dev)), uintptr(ordinal)); err != nil {
		return info, fmt.Errorf("device %d: %w", ordinal, err)
	}
	name := make([]byte, 256)
	if err := d.do(d.deviceGetName, uintptr(unsafe.Pointer(&name[0])), uintptr(len(name)), uintptr(dev)); err != nil {
		return info, fmt.Errorf("device %d: %w", ordinal, err)
	}
	info.Name = goStringFromBuf(name)
	var uuid [16]byte
	if err := d.do(d.deviceGetUUID, uintptr(unsafe.Pointer(&uuid[0])), uintptr(dev)); err != nil {
		return info, fmt.Errorf("device %d: %w", ordinal, err)
	}
	info.UUID = formatUUID(uuid)
	var total uint64
	if err := d.do(d.deviceTotalMem, uintptr(unsafe.Pointer(&total)), uintptr(dev)); err != nil {
		return info, fmt.Errorf("device %d: %w", ordinal, err)
	}
	info.TotalMem = total
	attrs := []struct {
		attr int
		dst  *int
	}{
		{attrCCMajor, &info.Arch.Major}, {attrCCMinor, &info.Arch.Minor},
		{attrSMCount, &info.SMs}, {attrL2Size, &info.L2Bytes},
		{attrRegsPerSM, &info.RegsPerSM}, {attrRegsPerBlock, &info.RegsPerBlock},
		{attrSmemPerSM, &info.SmemPerSM}, {attrSmemPerBlock, &info.SmemPerBlock},
		{attrSmemPerBlockOptin, &info.SmemPerBlockOptin},
		{attrMaxThreadsPerSM, &info.MaxThreadsPerSM}, {attrMaxThreadsPerBlock, &info.MaxThreadsPerBlock},
		{attrMaxBlocksPerSM, &info.MaxBlocksPerSM}, {attrWarpSize, &info.WarpSize},
		{attrClockRate, &info.ClockKHz}, {attrMemClockRate, &info.MemClockKHz},
		{attrMemBusWidth, &info.MemBusBits},
	}
	for _, a := range attrs {
		var v int32
		if err := d.do(d.deviceGetAttribute, uintptr(unsafe.Pointer(&v)), uintptr(a.attr), uintptr(dev)); err != nil {
			// Newer drivers may drop an attribute (clock rates are deprecated
			// in CUDA 13); keep zero for those rather than failing.
			if a.attr == attrClockRate || a.attr == attrMemClockRate {
				continue
			}
			return info, fmt.Errorf("device %d: attribute %d: %w", ordinal, a.attr, err)
		}
		*a.dst = int(v)
	}
	return info, nil
}

// formatUUID writes 16 bytes the way NVML does: GPU-8-4-4-4-12 hex digits.
func formatUUID(u [16]byte) string {
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
