package gpu

import (
	"errors"
	"fmt"
)

// Errors returned (wrapped) when loading libraries or finding devices.
var (
	// ErrNoDriver is returned when libcuda.so.1 cannot be loaded.
	ErrNoDriver = errors.New("no NVIDIA driver found (libcuda.so.1 not loadable)")
	// ErrNoDevice is returned when the driver loads but reports no CUDA device.
	ErrNoDevice = errors.New("no CUDA device found")
	// ErrNoNVRTC is returned when no NVRTC library can be loaded.
	ErrNoNVRTC = errors.New("no NVRTC library found")
	// ErrNoNVML is returned when libnvidia-ml.so.1 cannot be used.
	ErrNoNVML = errors.New("NVML not available")
)

// Errors returned (wrapped) while using a device.
var (
	// ErrTimeout is returned by the waiting calls when the work has not
	// finished within the timeout. The work is still running.
	ErrTimeout = errors.New("timed out waiting for the GPU")
	// ErrClosed is returned by Device.Do after Device.Close.
	ErrClosed = errors.New("device closed")
	// ErrCtxOutsideDo is returned when a Ctx is used after its Do call returned.
	ErrCtxOutsideDo = errors.New("gpu.Ctx used outside Device.Do")
	// ErrUnsupported is returned when the driver lacks an entry point a
	// call needs (e.g. cuLaunchKernelEx for LaunchConfig.PDL).
	ErrUnsupported = errors.New("not supported by this CUDA driver")
)

// CUDA result codes callers test for. The driver has many more; any code
// arrives as a *CUDAError.
const (
	CodeInvalidValue       = 1
	CodeOutOfMemory        = 2
	CodeNotInitialized     = 3
	CodeNoDevice           = 100
	CodeInvalidContext     = 201
	CodeNoBinaryForGPU     = 209
	CodeNotReady           = 600
	CodeIllegalAddress     = 700
	CodeLaunchOutOfRes     = 701
	CodeLaunchTimeout      = 702
	CodeHardwareStackError = 714
	CodeIllegalInstruction = 715
	CodeMisalignedAddress  = 716
	CodeInvalidAddrSpace   = 717
	CodeInvalidPC          = 718
	CodeLaunchFailed       = 719
)

// CUDAError is a failed CUDA driver call.
type CUDAError struct {
	Func string // the driver entry point, e.g. "cuMemAlloc_v2"
	Code int    // the CUresult
	Name string // the result's name, e.g. "CUDA_ERROR_OUT_OF_MEMORY"
}

// Error reads "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2)".
func (e *CUDAError) Error() string {
	return fmt.Sprintf("%s: %s (%d)", e.Func, e.Name, e.Code)
}

// Sticky reports whether the error poisons the CUDA context: after it every
// later call in the process fails, so the caller must restart the process
// (for the tuner: the measurement worker).
func (e *CUDAError) Sticky() bool {
	switch e.Code {
	case CodeIllegalAddress, CodeHardwareStackError, CodeIllegalInstruction,
		CodeMisalignedAddress, CodeInvalidAddrSpace, CodeInvalidPC, CodeLaunchFailed:
		return true
	}
	return false
}

// IsSticky reports whether err wraps a CUDAError that poisons the context.
func IsSticky(err error) bool {
	var ce *CUDAError
	return errors.As(err, &ce) && ce.Sticky()
}

// knownResults names common CUresult codes, for when the driver cannot be
// asked (cuGetErrorName missing or failing).
var knownResults = map[int]string{
	0:   "CUDA_SUCCESS",
	1:   "CUDA_ERROR_INVALID_VALUE",
	2:   "CUDA_ERROR_OUT_OF_MEMORY",
	3:   "CUDA_ERROR_NOT_INITIALIZED",
	4:   "CUDA_ERROR_DEINITIALIZED",
	34:  "CUDA_ERROR_STUB_LIBRARY",
	35:  "CUDA_ERROR_INSUFFICIENT_DRIVER",
	100: "CUDA_ERROR_NO_DEVICE",
	101: "CUDA_ERROR_INVALID_DEVICE",
	200: "CUDA_ERROR_INVALID_IMAGE",
	201: "CUDA_ERROR_INVALID_CONTEXT",
	209: "CUDA_ERROR_NO_BINARY_FOR_GPU",
	218: "CUDA_ERROR_INVALID_PTX",
	222: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
	400: "CUDA_ERROR_INVALID_HANDLE",
	500: "CUDA_ERROR_NOT_FOUND",
	600: "CUDA_ERROR_NOT_READY",
	700: "CUDA_ERROR_ILLEGAL_ADDRESS",
	701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
	702: "CUDA_ERROR_LAUNCH_TIMEOUT",
	714: "CUDA_ERROR_HARDWARE_STACK_ERROR",
	715: "CUDA_ERROR_ILLEGAL_INSTRUCTION",
	716: "CUDA_ERROR_MISALIGNED_ADDRESS",
	717: "CUDA_ERROR_INVALID_ADDRESS_SPACE",
	718: "CUDA_ERROR_INVALID_PC",
	719: "CUDA_ERROR_LAUNCH_FAILED",
	900: "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
	901: "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
	999: "CUDA_ERROR_UNKNOWN",
}

// fallbackName names a code without asking the driver.
func fallbackName(code int) string {
	if n, ok := knownResults[code]; ok {
		return n
	}
	return "CUDA_ERROR_UNRECOGNIZED"
}
