package space_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune/space"
)

func mustLimits(t *testing.T, arch string) space.Limits {
	t.Helper()
	l, err := space.LimitsFor(arch)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestCheckRules(t *testing.T) {
	kb := space.KiB
	tests := []struct {
		name   string
		id     string
		arch   string
		smem   int
		reason string // "" = accepted; else a substring of the error
	}{
		{"stock", "v1", "sm_90", 0, ""},
		{"stock smem within default", "r1f0u1s1w8", "sm_90", 16 * kb, ""},
		{"smem over opt-in", "r1f0u1s1w8", "sm_86", 112 * kb, "smem 112 KB > 99 KB opt-in cap of sm_86"},
		{"smem fractional", "r1f0u1s1w8", "sm_75", 64*kb + 512, "smem 64.5 KB > 64 KB opt-in cap of sm_75"},
		{"smem at opt-in", "r1f0u1s1w8", "sm_90", 227 * kb, ""},
		{"threads per SM", "r1f8u1s0w16", "sm_90", 0, "w=16 × f=8 needs 4096 threads/SM > 2048 on sm_90"},
		{"threads per SM turing", "r1f4u1s0w16", "sm_75", 0, "w=16 × f=4 needs 2048 threads/SM > 1024 on sm_75"},
		{"threads fit turing", "r1f2u1s0w16", "sm_75", 0, ""},
		{"threads per SM ampere", "r1f8u1s0w8", "sm_86", 0, "w=8 × f=8 needs 2048 threads/SM > 1536 on sm_86"},
		{"registers exact 32", "r1f8u1s0w8", "sm_90", 0, ""},
		{"in flight", "r8f0u8s0w8", "sm_90", 0, "r=8 × u=8 = 64 chunk loads in flight per lane > 16"},
		{"in flight at cap", "r4f0u4s0w8", "sm_90", 0, ""},
		{"in flight in a smem ring", "r4f0u8s2w8", "sm_90", 200 * kb, ""},
		{"smem ring, few warps: a search rule, not a constraint", "r1f0u2s2w4", "sm_90", 16 * kb, ""},
		{"smem ring needs cp.async", "r1f0u2s2w8", "sm_75", 16 * kb, "s=2 copies weights with cp.async, which sm_75 lacks"},
		{"smem ring on sm_80", "r1f0u2s2w8", "sm_80", 16 * kb, ""},
		{"smem per SM with floor", "r1f2u1s1w8", "sm_90", 128 * kb, "f=2 blocks × smem 128 KB = 256 KB > 228 KB per SM on sm_90"},
		{"smem per SM fits", "r1f1u1s1w8", "sm_90", 128 * kb, ""},
		{"bad knob", "", "sm_90", 0, "r=5"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p space.Params
			if tc.id == "" {
				p = space.Params{R: 5, F: 0, U: 1, S: 0, W: 8}
			} else {
				var err error
				if p, err = space.Parse(tc.id); err != nil {
					t.Fatal(err)
				}
			}
			err := space.Check(p, mustLimits(t, tc.arch), tc.smem)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("Check(%s) = %v, want nil", p, err)
				}
				return
			}
			if err == nil || !errors.Is(err, space.ErrExcluded) || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("Check(%s) = %v, want ErrExcluded containing %q", p, err, tc.reason)
			}
		})
	}
}

// A custom Limits reaches the rules the table archs never trigger.
func TestCheckSyntheticLimits(t *testing.T) {
	lim := space.Limits{Arch: "sm_x", RegsPerSM: 24576, MaxRegsPerThread: 255, MaxThreadsPerSM: 2048,
		MaxThreadsPerBlock: 256, MaxBlocksPerSM: 4, SmemPerSM: 64 * space.KiB,
		SmemPerBlockDefault: 48 * space.KiB, SmemPerBlockOptin: 48 * space.KiB}
	tests := []struct{ id, reason string }{
		{"r1f0u1s0w16", "w=16 gives 512 threads/block > 256 max on sm_x"},
		{"r1f6u1s0w2", "f=6 > 4 resident blocks/SM on sm_x"},
		{"r1f4u1s0w8", "f=4 at 256 threads leaves 24 registers/thread < 32 on sm_x"},
		{"r1f4u1s0w4", ""},
	}
	for _, tc := range tests {
		p, err := space.Parse(tc.id)
		if err != nil {
			t.Fatal(err)
		}
		err = space.Check(p, lim, 0)
		if tc.reason == "" && err != nil || tc.reason != "" && (err == nil || !strings.Contains(err.Error(), tc.reason)) {
			t.Errorf("Check(%s) = %v, want %q", tc.id, err, tc.reason)
		}
	}
	lim.RegsPerSM = 8192
	p, _ := space.Parse("r1f4u1s0w4")
	if err := space.Check(p, lim, 0); err == nil || !strings.Contains(err.Error(), "leaves 16 registers/thread < 32") {
		t.Errorf("Check with 16K registers = %v", err)
	}
}

func TestLimitsFor(t *testing.T) {
	for _, arch := range []string{"sm_70", "sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_100", "sm_120"} {
		l := mustLimits(t, arch)
		if l.Arch != arch || l.SmemPerBlockDefault != 48*space.KiB || l.SmemPerBlockOptin > l.SmemPerSM ||
			l.MaxThreadsPerBlock > l.MaxThreadsPerSM || l.RegsPerSM != 65536 {
			t.Errorf("%s: inconsistent limits %+v", arch, l)
		}
	}
	if _, err := space.LimitsFor("sm_91"); err == nil || !strings.Contains(err.Error(), "known sm_70, sm_75") {
		t.Errorf("LimitsFor(sm_91) = %v, want an error listing the known archs", err)
	}
	if got := space.KnownArchs(); got[len(got)-1] != "sm_120" {
		t.Errorf("KnownArchs not ordered: %v", got)
	}
}

// Every point of the space is either accepted or excluded with a reason,
// exactly once, and its ID parses back to it.
func TestEnumerateCoversSpace(t *testing.T) {
	lim := mustLimits(t, "sm_86")
	smem := func(p space.Params) int {
		if p.S >= 1 {
			return 32 * space.KiB * p.S
		}
		return 0
	}
	ok, ex := space.Enumerate(lim, space.FamilyKnobs{"l": {0, 1, 2}, "a": {0, 1}, "s": {0, 1, 2, 3}}, smem)
	want := 1
	for _, k := range space.Knobs {
		if k.Letter != "g" { // the tuner derives g per shape; Enumerate leaves it 0
			want *= len(k.Values)
		}
	}
	if len(ok)+len(ex) != want {
		t.Fatalf("Enumerate gave %d+%d points, want %d", len(ok), len(ex), want)
	}
	seen := map[string]bool{}
	for _, p := range ok {
		if err := space.Check(p, lim, smem(p)); err != nil {
			t.Errorf("%s accepted by Enumerate but Check says %v", p, err)
		}
		seen[p.ID()] = true
	}
	for _, e := range ex {
		if e.Reason == "" || space.Check(e.Params, lim, smem(e.Params)) == nil {
			t.Errorf("%s excluded without a reason Check agrees with: %q", e.Params, e.Reason)
		}
		seen[e.ID()] = true
	}
	if len(seen) != want {
		t.Fatalf("%d distinct IDs, want %d", len(seen), want)
	}
	for id := range seen {
		p, err := space.Parse(id)
		if err != nil || p.ID() != id {
			t.Errorf("Parse(%q) = %v, %v: does not round-trip", id, p, err)
		}
	}
	if len(ok) == 0 || len(ex) == 0 {
		t.Errorf("degenerate split: %d ok, %d excluded", len(ok), len(ex))
	}
	stock := false
	for _, p := range ok {
		stock = stock || p.IsStock()
	}
	if !stock {
		t.Error("stock variant excluded")
	}
}

func TestEnumerateDefaults(t *testing.T) {
	ok, _ := space.Enumerate(mustLimits(t, "sm_90"), space.FamilyKnobs{}, nil)
	for _, p := range ok {
		if p.L != 0 || p.A != 0 {
			t.Fatalf("%s enumerated without family knobs", p)
		}
	}
}

// TestParseRowGroups covers the launch knob g in IDs: optional, after w and
// before l and a, omitted at 0 (one group per block), 2..255.
func TestParseRowGroups(t *testing.T) {
	for _, tc := range []struct {
		id   string
		g    int
		want string // error text; "" = parses
	}{
		{"r1f0u4s1w16g8l1a1", 8, ""},
		{"r2f0u1s1w16g4a1", 4, ""},
		{"r1f0u1s0w8g2", 2, ""},
		{"r4f0u2s1w8g128", 128, ""},
		{"r4f0u2s1w8g07", 0, "knob g needs a number"},
		{"r1f0u1s0w8", 0, ""},
		{"r1f0u1s0w8g1", 0, "g=1 (row groups per block) not in"},
		{"r1f0u1s0w8g0", 0, "canonical form"},
		{"r1f0u1s0w8g3", 3, ""},
		{"r1f0u1s0w8g255", 255, ""},
		{"r1f0u1s0w8g256", 0, "g=256 (row groups per block) not in"},
		{"r1f0u1s0w8l1g8", 0, "unexpected \"g8\" at the end"},
		{"r1f0u1s0w8g", 0, "knob g needs a number"},
	} {
		p, err := space.Parse(tc.id)
		if tc.want == "" {
			if err != nil || p.G != tc.g || p.ID() != tc.id {
				t.Errorf("Parse(%q) = %+v, %v; want g=%d and the same ID back", tc.id, p, err, tc.g)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tc.id, err, tc.want)
		}
	}
}

func TestValueSet(t *testing.T) {
	for _, tc := range []struct {
		vs   []int
		want string
	}{
		{[]int{1, 2, 3, 4, 6, 8}, "1–4 6 8"},
		{[]int{0, 1}, "0 1"},
		{[]int{0, 1, 2}, "0–2"},
		{[]int{2, 4, 8, 16}, "2 4 8 16"},
		{nil, ""},
	} {
		if got := space.ValueSet(tc.vs); got != tc.want {
			t.Errorf("ValueSet(%v) = %q, want %q", tc.vs, got, tc.want)
		}
	}
	var g []int
	for _, k := range space.Knobs {
		if k.Letter == "g" {
			g = k.Values
		}
	}
	if got := space.ValueSet(g); got != "0 2–255" {
		t.Errorf("knob g: %q", got)
	}
}
