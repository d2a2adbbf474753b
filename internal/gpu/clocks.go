package gpu

import (
	"fmt"
	"strings"
	"time"
)

// Clocks is a snapshot of one GPU's clocks, taken before and after a
// measurement to tell whether it ran throttled.
type Clocks struct {
	At        time.Time
	SMMHz     int
	MemMHz    int
	TempC     int
	Reasons   []string // clock-event reasons as words, e.g. "sw_power_cap"; empty when none
	Throttled bool     // a reason that lowers clocks under load (power, thermal, slowdown) is active
}

// String reads "SM 1980 MHz, mem 3201 MHz, 41 C, no clock events".
func (c Clocks) String() string {
	r := "no clock events"
	if len(c.Reasons) > 0 {
		r = strings.Join(c.Reasons, ",")
		if c.Throttled {
			r = "THROTTLED: " + r
		}
	}
	return fmt.Sprintf("SM %d MHz, mem %d MHz, %d C, %s", c.SMMHz, c.MemMHz, c.TempC, r)
}

// clockReasons are NVML's clocks-event reason bits, in bit order, with
// whether each one lowers clocks during a measurement.
var clockReasons = []struct {
	bit      uint64
	word     string
	throttle bool
}{
	{0x1, "gpu_idle", false},
	{0x2, "applications_clocks_setting", false},
	{0x4, "sw_power_cap", true},
	{0x8, "hw_slowdown", true},
	{0x10, "sync_boost", false},
	{0x20, "sw_thermal_slowdown", true},
	{0x40, "hw_thermal_slowdown", true},
	{0x80, "hw_power_brake_slowdown", true},
	{0x100, "display_clock_setting", false},
	{0x200, "board_limit", true},
	{0x400, "reliability", true},
}

// ClockReasons turns NVML's clock-event reason mask into words and says
// whether any of them throttles. Unknown bits read "unknown_0x...".
func ClockReasons(mask uint64) (words []string, throttled bool) {
	rest := mask
	for _, r := range clockReasons {
		if mask&r.bit != 0 {
			words = append(words, r.word)
			throttled = throttled || r.throttle
			rest &^= r.bit
		}
	}
	if rest != 0 {
		words = append(words, fmt.Sprintf("unknown_%#x", rest))
	}
	return words, throttled
}

// NVMLInfo is what NVML says about one GPU.
type NVMLInfo struct {
	Name           string
	UUID           string
	Arch           Arch
	MemBusBits     int
	MaxMemClockMHz int
	MaxSMClockMHz  int
}

// PeakGBps is the theoretical DRAM bandwidth: 2 transfers per memory clock
// × bus width.
func (i NVMLInfo) PeakGBps() float64 {
	return 2 * float64(i.MaxMemClockMHz) * 1e6 * float64(i.MemBusBits) / 8 / 1e9
}
