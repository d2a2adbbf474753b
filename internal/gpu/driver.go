package gpu

import (
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// driverLib is the CUDA driver's soname.
const driverLib = "libcuda.so.1"

// driver holds the CUDA driver entry points. The versioned names are the
// ones cuda.h maps the plain names to; the plain cuMemAlloc & co. are the
// legacy 32-bit-pointer API and must not be called.
type driver struct {
	path string

	getErrorName, init, driverGetVersion                            sym
	deviceGetCount, deviceGet, deviceGetName, deviceGetUUID         sym
	deviceTotalMem, deviceGetAttribute                              sym
	primaryCtxRetain, primaryCtxRelease, ctxSetCurrent, ctxSync     sym
	memAlloc, memFree, memcpyHtoD, memcpyDtoH, memcpyDtoD, memsetD8 sym
	moduleLoadData, moduleUnload, moduleGetFunction                 sym
	funcGetAttribute, funcSetAttribute, occupancy, launchKernel     sym
	launchKernelEx                                                  sym // optional: CUDA 12.0+
	streamCreate, streamDestroy, streamSync, streamQuery            sym
	eventCreate, eventDestroy, eventRecord, eventSync, eventQuery   sym
	eventElapsed                                                    sym
	beginCapture, endCapture, graphInstantiate, graphLaunch         sym
	graphExecDestroy, graphDestroy                                  sym
}

func (d *driver) specs() []symSpec {
	return []symSpec{
		{dst: &d.getErrorName, names: []string{"cuGetErrorName"}},
		{dst: &d.init, names: []string{"cuInit"}},
		{dst: &d.driverGetVersion, names: []string{"cuDriverGetVersion"}},
		{dst: &d.deviceGetCount, names: []string{"cuDeviceGetCount"}},
		{dst: &d.deviceGet, names: []string{"cuDeviceGet"}},
		{dst: &d.deviceGetName, names: []string{"cuDeviceGetName"}},
		{dst: &d.deviceGetUUID, names: []string{"cuDeviceGetUuid_v2", "cuDeviceGetUuid"}},
		{dst: &d.deviceTotalMem, names: []string{"cuDeviceTotalMem_v2"}},
		{dst: &d.deviceGetAttribute, names: []string{"cuDeviceGetAttribute"}},
		{dst: &d.primaryCtxRetain, names: []string{"cuDevicePrimaryCtxRetain"}},
		{dst: &d.primaryCtxRelease, names: []string{"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"}},
		{dst: &d.ctxSetCurrent, names: []string{"cuCtxSetCurrent"}},
		{dst: &d.ctxSync, names: []string{"cuCtxSynchronize"}},
		{dst: &d.memAlloc, names: []string{"cuMemAlloc_v2"}},
		{dst: &d.memFree, names: []string{"cuMemFree_v2"}},
		{dst: &d.memcpyHtoD, names: []string{"cuMemcpyHtoD_v2"}},
		{dst: &d.memcpyDtoH, names: []string{"cuMemcpyDtoH_v2"}},
		{dst: &d.memcpyDtoD, names: []string{"cuMemcpyDtoD_v2"}},
		{dst: &d.memsetD8, names: []string{"cuMemsetD8_v2"}},
		{dst: &d.moduleLoadData, names: []string{"cuModuleLoadData"}},
		{dst: &d.moduleUnload, names: []string{"cuModuleUnload"}},
		{dst: &d.moduleGetFunction, names: []string{"cuModuleGetFunction"}},
		{dst: &d.funcGetAttribute, names: []string{"cuFuncGetAttribute"}},
		{dst: &d.funcSetAttribute, names: []string{"cuFuncSetAttribute"}},
		{dst: &d.occupancy, names: []string{"cuOccupancyMaxActiveBlocksPerMultiprocessor"}},
		{dst: &d.launchKernel, names: []string{"cuLaunchKernel"}},
		{dst: &d.launchKernelEx, names: []string{"cuLaunchKernelEx"}, optional: true},
		{dst: &d.streamCreate, names: []string{"cuStreamCreate"}},
		{dst: &d.streamDestroy, names: []string{"cuStreamDestroy_v2", "cuStreamDestroy"}},
		{dst: &d.streamSync, names: []string{"cuStreamSynchronize"}},
		{dst: &d.streamQuery, names: []string{"cuStreamQuery"}},
		{dst: &d.eventCreate, names: []string{"cuEventCreate"}},
		{dst: &d.eventDestroy, names: []string{"cuEventDestroy_v2", "cuEventDestroy"}},
		{dst: &d.eventRecord, names: []string{"cuEventRecord"}},
		{dst: &d.eventSync, names: []string{"cuEventSynchronize"}},
		{dst: &d.eventQuery, names: []string{"cuEventQuery"}},
		{dst: &d.eventElapsed, names: []string{"cuEventElapsedTime_v2", "cuEventElapsedTime"}},
		{dst: &d.beginCapture, names: []string{"cuStreamBeginCapture_v2"}},
		{dst: &d.endCapture, names: []string{"cuStreamEndCapture"}},
		{dst: &d.graphInstantiate, names: []string{"cuGraphInstantiateWithFlags"}},
		{dst: &d.graphLaunch, names: []string{"cuGraphLaunch"}},
		{dst: &d.graphExecDestroy, names: []string{"cuGraphExecDestroy"}},
		{dst: &d.graphDestroy, names: []string{"cuGraphDestroy"}},
	}
}

var (
	driverOnce sync.Once
	theDriver  *driver
	driverErr  error
)

// dlopenReason is dlopen's error in words; dlerror can come back empty
// (another thread's dlopen consumed it), and a bare colon helps nobody.
func dlopenReason(err error) string {
	if msg := strings.TrimSpace(err.Error()); msg != "" {
		return msg
	}
	return "the dynamic loader gave no reason (is the NVIDIA driver installed, and its libcuda.so.1 on the loader path?)"
}

// loadDriver loads libcuda.so.1 once and resolves every entry point.
func loadDriver() (*driver, error) {
	driverOnce.Do(func() {
		h, err := purego.Dlopen(driverLib, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			driverErr = fmt.Errorf("%w: %s", ErrNoDriver, dlopenReason(err))
			return
		}
		d := &driver{}
		if err := resolve(h, driverLib, d.specs()); err != nil {
			driverErr = fmt.Errorf("%w: %v", ErrNoDriver, err)
			return
		}
		d.path = mappedFile(d.init.addr)
		theDriver = d
	})
	return theDriver, driverErr
}

// check turns a CUresult from s into nil or a *CUDAError.
func (d *driver) check(s sym, code int) error {
	if code == 0 {
		return nil
	}
	return &CUDAError{Func: s.name, Code: code, Name: d.errorName(code)}
}

// do calls s and checks its result.
//
//go:uintptrescapes
func (d *driver) do(s sym, args ...uintptr) error {
	return d.check(s, s.call(args...))
}

// errorName asks the driver for the name of code.
func (d *driver) errorName(code int) string {
	if d == nil || d.getErrorName.addr == 0 {
		return fallbackName(code)
	}
	var p unsafe.Pointer
	if d.getErrorName.call(uintptr(code), uintptr(unsafe.Pointer(&p))) != 0 || p == nil {
		return fallbackName(code)
	}
	return goString(p, 128)
}

var (
	initOnce sync.Once
	initErr  error
)

// initDriver loads the driver and runs cuInit once per process.
func initDriver() (*driver, error) {
	d, err := loadDriver()
	if err != nil {
		return nil, err
	}
	initOnce.Do(func() {
		err := d.do(d.init, 0)
		if ce, ok := err.(*CUDAError); ok && ce.Code == CodeNoDevice {
			err = fmt.Errorf("%w: %v", ErrNoDevice, err)
		}
		initErr = err
	})
	return d, initErr
}

// Version is a library version, e.g. CUDA 13.0 or NVRTC 12.8.
type Version struct {
	Major, Minor int
}

// String returns "13.0".
func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// Less reports whether v is older than w.
func (v Version) Less(w Version) bool {
	return v.Major < w.Major || v.Major == w.Major && v.Minor < w.Minor
}

// DriverVersion returns the CUDA version the driver supports (cuDriverGetVersion),
// e.g. 13.0. It returns ErrNoDriver (wrapped) without a driver.
func DriverVersion() (Version, error) {
	d, err := loadDriver()
	if err != nil {
		return Version{}, err
	}
	var v int32
	if err := d.do(d.driverGetVersion, uintptr(unsafe.Pointer(&v))); err != nil {
		return Version{}, err
	}
	return Version{Major: int(v) / 1000, Minor: int(v) % 1000 / 10}, nil
}

// DriverPath returns the file libcuda.so.1 was loaded from, or "".
func DriverPath() string {
	d, err := loadDriver()
	if err != nil {
		return ""
	}
	return d.path
}
