package gpu_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune/internal/gpu"
	"github.com/gemvtune/gemvtune/space"
)

func TestClockReasons(t *testing.T) {
	tests := []struct {
		mask      uint64
		words     []string
		throttled bool
	}{
		{0, nil, false},
		{0x1, []string{"gpu_idle"}, false},
		{0x4, []string{"sw_power_cap"}, true},
		{0x1 | 0x10, []string{"gpu_idle", "sync_boost"}, false},
		{0x20 | 0x40, []string{"sw_thermal_slowdown", "hw_thermal_slowdown"}, true},
		{0x8 | 0x800, []string{"hw_slowdown", "unknown_0x800"}, true},
	}
	for _, tt := range tests {
		words, thr := gpu.ClockReasons(tt.mask)
		if !reflect.DeepEqual(words, tt.words) || thr != tt.throttled {
			t.Errorf("ClockReasons(%#x) = %v, %v; want %v, %v", tt.mask, words, thr, tt.words, tt.throttled)
		}
	}
	c := gpu.Clocks{SMMHz: 1980, MemMHz: 3201, TempC: 40, Reasons: []string{"sw_power_cap"}, Throttled: true}
	if s := c.String(); !strings.Contains(s, "THROTTLED: sw_power_cap") || !strings.Contains(s, "1980 MHz") {
		t.Errorf("Clocks.String() = %q", s)
	}
}

func TestOpenNVMLNeverPanics(t *testing.T) {
	n, err := gpu.OpenNVML()
	if err != nil {
		t.Logf("NVML absent, as expected without a driver: %v", err)
		return
	}
	defer n.Close()
	v, err := n.DriverVersion()
	if err != nil || v == "" {
		t.Errorf("NVML DriverVersion = %q, %v", v, err)
	}
}

func TestPeakGBps(t *testing.T) {
	// H100 SXM: 2619 MHz HBM3, 5120-bit bus: 3352 GB/s.
	got := gpu.NVMLInfo{MaxMemClockMHz: 2619, MemBusBits: 5120}.PeakGBps()
	if got < 3351 || got > 3353 {
		t.Errorf("NVML peak = %.1f GB/s, want 3352", got)
	}
	got = gpu.Info{MemClockKHz: 2619000, MemBusBits: 5120}.PeakGBps()
	if got < 3351 || got > 3353 {
		t.Errorf("attribute peak = %.1f GB/s, want 3352", got)
	}
}

// An H200's attributes give sm_90's table limits (the device and the
// programming guide agree there).
func TestInfoLimits(t *testing.T) {
	h200 := gpu.Info{Arch: gpu.Arch{Major: 9, Minor: 0}, RegsPerSM: 65536, MaxThreadsPerSM: 2048, MaxThreadsPerBlock: 1024,
		MaxBlocksPerSM: 32, SmemPerSM: 228 * space.KiB, SmemPerBlock: 48 * space.KiB, SmemPerBlockOptin: 227 * space.KiB}
	want, err := space.LimitsFor("sm_90")
	if err != nil {
		t.Fatal(err)
	}
	if got := h200.Limits(); got != want {
		t.Errorf("Limits() = %+v, want %+v", got, want)
	}
}
