package tuner

import (
	"errors"
	"testing"

	"github.com/gemvtune/gemvtune/internal/gpu"
	"github.com/gemvtune/gemvtune/variants"
)

// TestPinSearch: pinSearch raises shared memory only for a grid of fewer
// blocks than its SMs could hold, to the least amount at which each SM
// holds its even share and no more, and leaves every other launch alone.
// The occupancy model is the H200's shared memory alone (228 KiB per SM,
// 1 KiB reserved per block, 227 KiB per block at most), capped by a
// register limit per case.
func TestPinSearch(t *testing.T) {
	h200 := gpu.Info{SMs: 132, SmemPerSM: 228 << 10, SmemPerBlockOptin: 227 << 10}
	for _, tc := range []struct {
		name      string
		blocks    uint32
		shared    uint32
		regsLimit int // resident blocks the registers allow
		want      uint32
	}{
		{"one block per SM where two fit", 128, 80128, 2, 115968},
		{"two per SM where five fit", 264, 16384, 5, 77056},
		{"the launch already pins it", 132, 150000, 8, 150000},
		{"several waves", 1536, 16384, 4, 16384},
		{"every slot filled", 264, 43264, 2, 43264},
		{"registers allow one", 100, 8192, 1, 8192},
		{"no shared memory at all", 256, 0, 4, 77056},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fits := func(s int) (int, error) { return min(h200.SmemPerSM/(s+1024), tc.regsLimit), nil }
			l := variants.Launch{Grid: [3]uint32{tc.blocks, 1, 1}, Block: [3]uint32{512, 1, 1}, SharedBytes: tc.shared}
			got, err := pinSearch(l, h200, fits)
			if err != nil || got != tc.want {
				t.Fatalf("pinSearch = %d, %v; want %d", got, err, tc.want)
			}
			share := (int(tc.blocks) + h200.SMs - 1) / h200.SMs
			if n, _ := fits(int(got)); got != tc.shared && (n != share || got < tc.shared) {
				t.Errorf("%d bytes hold %d blocks per SM, want the even share %d", got, n, share)
			}
			if got != tc.shared {
				if n, _ := fits(int(got) - pinStep); n <= share {
					t.Errorf("%d bytes already pin it: %d is not the least", int(got)-pinStep, got)
				}
			}
		})
	}
	// An occupancy error is returned, with the launch's own amount.
	boom := errors.New("occupancy failed")
	l := variants.Launch{Grid: [3]uint32{128, 1, 1}, Block: [3]uint32{512, 1, 1}, SharedBytes: 4096}
	if got, err := pinSearch(l, h200, func(int) (int, error) { return 0, boom }); !errors.Is(err, boom) || got != 4096 {
		t.Errorf("pinSearch with a failing occupancy = %d, %v", got, err)
	}
}
