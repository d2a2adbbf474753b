package gpu_test

import (
	"testing"

	"github.com/gemvtune/gemvtune/internal/gpu"
)

func TestParseArch(t *testing.T) {
	tests := []struct {
		in      string
		want    gpu.Arch
		wantErr bool
	}{
		{"sm_90", gpu.Arch{Major: 9, Minor: 0}, false},
		{"sm_70", gpu.Arch{Major: 7, Minor: 0}, false},
		{"sm_86", gpu.Arch{Major: 8, Minor: 6}, false},
		{"sm_120", gpu.Arch{Major: 12, Minor: 0}, false},
		{"90", gpu.Arch{Major: 9, Minor: 0}, false},
		{"9.0", gpu.Arch{Major: 9, Minor: 0}, false},
		{"12.1", gpu.Arch{Major: 12, Minor: 1}, false},
		{"sm_9", gpu.Arch{}, true},
		{"sm_090", gpu.Arch{}, true},
		{"sm_90a", gpu.Arch{}, true},
		{"sm_+90", gpu.Arch{}, true},
		{"sm_9.0", gpu.Arch{}, true},
		{"9.10", gpu.Arch{}, true},
		{"", gpu.Arch{}, true},
		{"compute_90", gpu.Arch{}, true},
	}
	for _, tt := range tests {
		got, err := gpu.ParseArch(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseArch(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseArch(%q) = %v, want %v", tt.in, got, tt.want)
		}
		if err == nil && len(tt.in) > 3 && tt.in[:3] == "sm_" && got.String() != tt.in {
			t.Errorf("ParseArch(%q).String() = %q, want it back", tt.in, got.String())
		}
	}
}

func TestArchNumber(t *testing.T) {
	for _, n := range []int{35, 70, 75, 80, 86, 89, 90, 100, 103, 120, 121} {
		if got := gpu.ArchFromNumber(n).Number(); got != n {
			t.Errorf("ArchFromNumber(%d).Number() = %d", n, got)
		}
	}
	if s := gpu.ArchFromNumber(100).String(); s != "sm_100" {
		t.Errorf("ArchFromNumber(100) = %s, want sm_100", s)
	}
}
