package gpu

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestCUDAErrorText(t *testing.T) {
	tests := []struct {
		fn     string
		code   int
		want   string
		sticky bool
	}{
		{"cuMemAlloc_v2", 2, "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2)", false},
		{"cuLaunchKernel", 700, "cuLaunchKernel: CUDA_ERROR_ILLEGAL_ADDRESS (700)", true},
		{"cuCtxSetCurrent", 201, "cuCtxSetCurrent: CUDA_ERROR_INVALID_CONTEXT (201)", false},
		{"cuStreamQuery", 719, "cuStreamQuery: CUDA_ERROR_LAUNCH_FAILED (719)", true},
		{"cuModuleLoadData", 209, "cuModuleLoadData: CUDA_ERROR_NO_BINARY_FOR_GPU (209)", false},
		{"cuX", 12345, "cuX: CUDA_ERROR_UNRECOGNIZED (12345)", false},
	}
	var d *driver // no driver loaded: names come from the built-in table
	for _, tt := range tests {
		err := d.check(sym{name: tt.fn}, tt.code)
		if err == nil || err.Error() != tt.want {
			t.Errorf("check(%s, %d) = %v, want %q", tt.fn, tt.code, err, tt.want)
			continue
		}
		wrapped := fmt.Errorf("launching r2f3u1s0w8: %w", err)
		var ce *CUDAError
		if !errors.As(wrapped, &ce) || ce.Code != tt.code {
			t.Errorf("errors.As(%v) did not find code %d", wrapped, tt.code)
		}
		if IsSticky(wrapped) != tt.sticky {
			t.Errorf("IsSticky(%v) = %v, want %v", wrapped, !tt.sticky, tt.sticky)
		}
	}
	if err := d.check(sym{name: "cuInit"}, 0); err != nil {
		t.Errorf("check(success) = %v, want nil", err)
	}
}

func TestSentinelsWrap(t *testing.T) {
	for _, s := range []error{ErrNoDriver, ErrNoDevice, ErrNoNVRTC, ErrNoNVML, ErrTimeout, ErrClosed} {
		w := fmt.Errorf("context: %w", s)
		if !errors.Is(w, s) {
			t.Errorf("errors.Is(%v, %v) = false", w, s)
		}
	}
	if ErrNoDriver.Error() != "no NVIDIA driver found (libcuda.so.1 not loadable)" {
		t.Errorf("ErrNoDriver = %q", ErrNoDriver)
	}
}

func TestNVRTCErrorText(t *testing.T) {
	e := &NVRTCError{Func: "nvrtcCompileProgram", Code: 6, Msg: "NVRTC_ERROR_COMPILATION"}
	ce := &CompileError{Name: "gemv.cu", Arch: Arch{9, 0}, Log: "gemv.cu(3): error: identifier \"z\" is undefined\n1 error detected", Err: e}
	want := `compiling gemv.cu for sm_90: nvrtcCompileProgram: NVRTC_ERROR_COMPILATION (6): gemv.cu(3): error: identifier "z" is undefined`
	if ce.Error() != want {
		t.Errorf("CompileError = %q\nwant %q", ce.Error(), want)
	}
	var ne *NVRTCError
	if !errors.As(ce, &ne) || ne.Code != 6 {
		t.Errorf("errors.As(CompileError, *NVRTCError) failed")
	}
}

func TestDlopenReasonNeverEmpty(t *testing.T) {
	if got := dlopenReason(errors.New("")); got == "" || !strings.Contains(got, "libcuda.so.1") {
		t.Errorf("empty dlerror: %q", got)
	}
	if got := dlopenReason(errors.New("libcuda.so.1: cannot open shared object file")); got != "libcuda.so.1: cannot open shared object file" {
		t.Errorf("dlerror kept: %q", got)
	}
}
