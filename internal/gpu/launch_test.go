package gpu

import (
	"math"
	"strings"
	"testing"
	"unsafe"
)

func TestNewArgsPacking(t *testing.T) {
	a, err := NewArgs(DevPtr(0x7f0012345600), int32(-3), uint32(0xfffffffe), float32(1.5), float32(math.Inf(-1)))
	if err != nil {
		t.Fatal(err)
	}
	want := []uint64{0x7f0012345600, 0xfffffffd, 0xfffffffe, uint64(math.Float32bits(1.5)), uint64(math.Float32bits(float32(math.Inf(-1))))}
	if a.Len() != len(want) {
		t.Fatalf("Len = %d, want %d", a.Len(), len(want))
	}
	for i, w := range want {
		if got := a.slot(i); got != w {
			t.Errorf("slot %d = %#x, want %#x", i, got, w)
		}
	}
	// The kernel reads 4-byte parameters from the slot's first bytes
	// (little-endian), so an int32 must be found there.
	if got := *(*int32)(unsafe.Pointer(&a.buf[1])); got != -3 {
		t.Errorf("int32 slot reads %d through a 4-byte load, want -3", got)
	}
	if got := *(*float32)(unsafe.Pointer(&a.buf[3])); got != 1.5 {
		t.Errorf("float32 slot reads %v through a 4-byte load, want 1.5", got)
	}
	if err := a.Set(1, int32(7)); err != nil || a.slot(1) != 7 {
		t.Errorf("Set(1, 7): err %v, slot %#x", err, a.slot(1))
	}
	if err := a.Set(5, int32(7)); err == nil {
		t.Errorf("Set(5) on 5 args: want an error")
	}
}

func TestNewArgsRejects(t *testing.T) {
	for _, v := range []any{int(1), int64(1), float64(1), uint64(1), uintptr(1), "x", nil, []float32{1}} {
		_, err := NewArgs(DevPtr(1), v)
		if err == nil {
			t.Errorf("NewArgs(%T) = nil error, want one", v)
			continue
		}
		if !strings.Contains(err.Error(), "argument 1") || !strings.Contains(err.Error(), "int32") {
			t.Errorf("NewArgs(%T) error %q should name the argument and the accepted types", v, err)
		}
	}
}

func TestDims(t *testing.T) {
	if got := dims([3]uint32{4, 0, 0}); got != [3]uint32{4, 1, 1} {
		t.Errorf("dims = %v", got)
	}
}

func TestBytesView(t *testing.T) {
	f := []float32{1, -2}
	b := Bytes(f)
	if len(b) != 8 || b[3] != 0x3f || b[7] != 0xc0 {
		t.Errorf("Bytes(%v) = % x", f, b)
	}
	if Bytes([]float32(nil)) != nil {
		t.Errorf("Bytes(nil) not nil")
	}
}

// TestLaunchStructLayout pins the Go mirrors of CUlaunchConfig and
// CUlaunchAttribute to cuda.h's layout on 64-bit Linux.
func TestLaunchStructLayout(t *testing.T) {
	var lc cuLaunchConfig
	var la cuLaunchAttribute
	for _, tt := range []struct {
		name      string
		got, want uintptr
	}{
		{"sizeof(CUlaunchConfig)", unsafe.Sizeof(lc), 56},
		{"offsetof(hStream)", unsafe.Offsetof(lc.stream), 32},
		{"offsetof(attrs)", unsafe.Offsetof(lc.attrs), 40},
		{"offsetof(numAttrs)", unsafe.Offsetof(lc.numAttrs), 48},
		{"sizeof(CUlaunchAttribute)", unsafe.Sizeof(la), 72},
		{"offsetof(value)", unsafe.Offsetof(la.value), 8},
	} {
		if tt.got != tt.want {
			t.Errorf("%s = %d, want %d", tt.name, tt.got, tt.want)
		}
	}
}
