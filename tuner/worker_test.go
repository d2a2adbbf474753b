package tuner

import (
	"context"
	"strings"
	"testing"
)

// The rotation exceeds 4 × L2 for every size (at least two copies); warm
// is one copy whatever the size.
func TestWeightCopies(t *testing.T) {
	const l2 = 60 << 20
	for _, tc := range []struct {
		bytes int
		warm  bool
		want  int
	}{
		{bytes: 2 << 20, want: 121}, // 1024x4096 q4_0-sized: many copies
		{bytes: 40 << 20, want: 7},  // under L2: 6 copies exceed 4 × L2, plus one
		{bytes: 60 << 20, want: 5},  // exactly L2
		{bytes: 470 << 20, want: 2}, // far past L2: still two, alternating
		{bytes: 40 << 20, warm: true, want: 1},
		{bytes: 470 << 20, warm: true, want: 1},
	} {
		got := weightCopies(l2, tc.bytes, tc.warm)
		if got != tc.want {
			t.Errorf("weightCopies(%d MiB, warm %v) = %d, want %d", tc.bytes>>20, tc.warm, got, tc.want)
		}
		if !tc.warm && got*tc.bytes <= 4*l2 {
			t.Errorf("%d copies of %d MiB do not exceed 4 × L2", got, tc.bytes>>20)
		}
	}
}

// L2-warm times never reach a cache: a run asked to record them refuses
// before it touches a GPU.
func TestWarmL2NeverRecords(t *testing.T) {
	_, err := Run(context.Background(), []Job{{Format: "q4_0", Rows: 4096, Cols: 4096}},
		Options{WarmL2: true, Record: func(Decision) error { return nil }})
	if err == nil || !strings.Contains(err.Error(), "never recorded") {
		t.Errorf("WarmL2 with Record: %v", err)
	}
}

// Every launch of the same-bytes read has an ID that names it and nothing
// else: not a variant, not another launch, not the PDL form of either.
func TestReadLaunchIDs(t *testing.T) {
	for k := range readLaunchConfigs {
		id := readLaunchID(k)
		if got, ok := readLaunchIndex(id); !ok || got != k {
			t.Errorf("readLaunchIndex(%q) = %d, %v; want %d, true", id, got, ok, k)
		}
		if cfg := readLaunchConfig(k, 132); cfg.Grid[0] == 0 || cfg.Block[0] == 0 || cfg.Block[0] > 1024 {
			t.Errorf("launch %d on 132 SMs: grid %d, block %d", k, cfg.Grid[0], cfg.Block[0])
		}
	}
	for _, id := range []string{"read", "read@", "read@-1", "read@01", "read@x",
		readLaunchID(len(readLaunchConfigs)), pdlPrefix + readLaunchID(0), "r1f0u1s0w8", "ceiling"} {
		if k, ok := readLaunchIndex(id); ok {
			t.Errorf("readLaunchIndex(%q) = %d, true; want false", id, k)
		}
	}
}
