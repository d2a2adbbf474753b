package space

import (
	"fmt"
	"sort"
	"strings"
)

// KiB is one kibibyte; shared-memory figures are given in it.
const KiB = 1024

// Limits holds the per-SM and per-block resource limits of one GPU
// architecture that decide which variants can launch at all (and which
// launch-bounds floors make sense). LimitsFor gives the figures of the CUDA
// programming guide ("Technical Specifications per Compute Capability"); a
// tuner may instead fill a Limits from the device's attributes.
type Limits struct {
	Arch                string // "sm_90"
	RegsPerSM           int    // 32-bit registers in the SM's register file
	MaxRegsPerThread    int    // largest register count one thread may use
	MaxThreadsPerSM     int    // resident threads per SM
	MaxThreadsPerBlock  int    // threads one block may have
	MaxBlocksPerSM      int    // resident blocks per SM
	SmemPerSM           int    // shared memory per SM, bytes
	SmemPerBlockDefault int    // dynamic+static shared memory per block without opt-in (48 KB)
	SmemPerBlockOptin   int    // per-block shared memory after cuFuncSetAttribute opt-in
}

var limitsTable = map[string]Limits{
	"sm_70":  {"sm_70", 65536, 255, 2048, 1024, 32, 96 * KiB, 48 * KiB, 96 * KiB},
	"sm_75":  {"sm_75", 65536, 255, 1024, 1024, 16, 64 * KiB, 48 * KiB, 64 * KiB},
	"sm_80":  {"sm_80", 65536, 255, 2048, 1024, 32, 164 * KiB, 48 * KiB, 163 * KiB},
	"sm_86":  {"sm_86", 65536, 255, 1536, 1024, 16, 100 * KiB, 48 * KiB, 99 * KiB},
	"sm_87":  {"sm_87", 65536, 255, 1536, 1024, 16, 164 * KiB, 48 * KiB, 163 * KiB},
	"sm_89":  {"sm_89", 65536, 255, 1536, 1024, 24, 100 * KiB, 48 * KiB, 99 * KiB},
	"sm_90":  {"sm_90", 65536, 255, 2048, 1024, 32, 228 * KiB, 48 * KiB, 227 * KiB},
	"sm_100": {"sm_100", 65536, 255, 2048, 1024, 32, 228 * KiB, 48 * KiB, 227 * KiB},
	"sm_120": {"sm_120", 65536, 255, 1536, 1024, 32, 128 * KiB, 48 * KiB, 99 * KiB},
}

// KnownArchs returns the architectures LimitsFor knows, in ascending order.
func KnownArchs() []string {
	out := make([]string, 0, len(limitsTable))
	for a := range limitsTable {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool {
		return limitsTable[out[i]].order() < limitsTable[out[j]].order()
	})
	return out
}

func (l Limits) order() int {
	var n int
	fmt.Sscanf(l.Arch, "sm_%d", &n)
	return n
}

// LimitsFor returns the table limits of arch ("sm_90") for offline planning.
func LimitsFor(arch string) (Limits, error) {
	if l, ok := limitsTable[arch]; ok {
		return l, nil
	}
	return Limits{}, fmt.Errorf("no limits for arch %q: known %s", arch, strings.Join(KnownArchs(), ", "))
}
