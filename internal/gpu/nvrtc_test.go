package gpu_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune/internal/gpu"
	"github.com/gemvtune/gemvtune/internal/gpu/gputest"
)

var sm90 = gpu.Arch{Major: 9, Minor: 0}

func TestNVRTCFound(t *testing.T) {
	n := gputest.NVRTC(t, sm90)
	t.Logf("%s: %s", n, n.ArchRange())
	if n.Version.Major < 11 || !n.Supports(sm90) || n.Path == "" {
		t.Errorf("NVRTC %+v", n)
	}
	libs, _ := gpu.FindNVRTC()
	seen := map[string]bool{}
	for _, l := range libs {
		if seen[l.Path] {
			t.Errorf("%s loaded twice", l.Path)
		}
		seen[l.Path] = true
	}
}

func TestNVRTCCompile(t *testing.T) {
	n := gputest.NVRTC(t, sm90)
	for _, src := range []struct{ name, code string }{{"gemv.cu", gemvSrc}, {"spin.cu", spinSrc}} {
		cubin, log, err := n.Compile(src.code, src.name, sm90, "-lineinfo")
		if err != nil {
			t.Fatalf("%s: %v\n%s", src.name, err, log)
		}
		if !bytes.HasPrefix(cubin, []byte("\x7fELF")) || len(cubin) < 1000 {
			t.Errorf("%s: cubin is not an ELF image (%d bytes)", src.name, len(cubin))
		}
		if !bytes.Contains(cubin, []byte(strings.TrimSuffix(src.name, ".cu"))) {
			t.Errorf("%s: cubin lacks its kernel's name", src.name)
		}
	}
}

func TestNVRTCCompileErrors(t *testing.T) {
	n := gputest.NVRTC(t, sm90)
	_, log, err := n.Compile(`extern "C" __global__ void k(float* y) { y[0] = undefined_z; }`, "bad.cu", sm90)
	var ce *gpu.CompileError
	if !errors.As(err, &ce) || !strings.Contains(log, "undefined_z") || !strings.Contains(err.Error(), "bad.cu") {
		t.Errorf("bad source: err %v, log %q; want a CompileError quoting the log", err, log)
	}
	_, _, err = n.Compile(gemvSrc, "gemv.cu", sm90, "--no-such-option")
	var ne *gpu.NVRTCError
	if !errors.As(err, &ne) || !strings.Contains(ne.Msg, "OPTION") {
		t.Errorf("bad option: err %v, want an NVRTCError naming the option error", err)
	}
	if _, _, err := n.Compile(gemvSrc, "gemv.cu", gpu.Arch{Major: 2, Minor: 0}); err == nil || !strings.Contains(err.Error(), "sm_20") {
		t.Errorf("sm_20: err %v, want one naming the arch", err)
	}
}
