package space_test

import (
	"errors"
	"testing"

	"github.com/gemvtune/gemvtune/space"
)

func TestParseArch(t *testing.T) {
	tests := []struct {
		in   string
		want space.Arch
		ok   bool
	}{
		{"sm_90", space.Arch{Major: 9, Minor: 0}, true},
		{"sm_70", space.Arch{Major: 7, Minor: 0}, true},
		{"sm_86", space.Arch{Major: 8, Minor: 6}, true},
		{"sm_100", space.Arch{Major: 10, Minor: 0}, true},
		{"sm_121", space.Arch{Major: 12, Minor: 1}, true},
		{"sm90", space.Arch{}, false},
		{"sm_9", space.Arch{}, false},
		{"sm_09", space.Arch{}, false},
		{"sm_90a", space.Arch{}, false},
		{"sm_1000", space.Arch{}, false},
		{"SM_90", space.Arch{}, false},
		{"compute_90", space.Arch{}, false},
		{"", space.Arch{}, false},
		{"sm_", space.Arch{}, false},
		{"sm_-1", space.Arch{}, false},
	}
	for _, tt := range tests {
		got, err := space.ParseArch(tt.in)
		if tt.ok {
			if err != nil || got != tt.want || got.String() != tt.in {
				t.Errorf("ParseArch(%q) = %v (%q), %v; want %v", tt.in, got, got.String(), err, tt.want)
			}
			continue
		}
		if !errors.Is(err, space.ErrBadArch) {
			t.Errorf("ParseArch(%q) error = %v; want ErrBadArch", tt.in, err)
		}
	}
	_, err := space.ParseArch("sm90")
	if want := `arch "sm90": want sm_XY, e.g. sm_90`; err == nil || err.Error() != want {
		t.Errorf("ParseArch(sm90) error = %v; want %q", err, want)
	}
}

func TestParseArchAllocs(t *testing.T) {
	n := testing.AllocsPerRun(100, func() { _, _ = space.ParseArch("sm_90") })
	if n != 0 {
		t.Errorf("ParseArch allocates %v times per call; want 0", n)
	}
}

func FuzzParseArch(f *testing.F) {
	for _, s := range []string{"sm_90", "sm_100", "sm90", "sm_0", "sm_09", "sm_9a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := space.ParseArch(s)
		if err != nil {
			if !errors.Is(err, space.ErrBadArch) {
				t.Fatalf("error %v is not ErrBadArch", err)
			}
			return
		}
		if a.String() != s {
			t.Fatalf("ParseArch(%q).String() = %q", s, a.String())
		}
	})
}
