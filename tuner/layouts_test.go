package tuner

import (
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

func TestSearchSpaceLayouts(t *testing.T) {
	lim, err := space.LimitsFor("sm_90")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		format, id string
		searched   bool
		reason     string
	}{
		{"q4_0", "v1", true, ""},
		{"q4_0", "r2f0u2s1w16a1", false, "q4_0 l=0 (raw bytes) is not searched"},
		{"q4_0", "r2f0u2s1w16l1a1", false, "q4_0 s=1 is not searched on sm_90"},
		{"q4_0", "r2f0u2s0w16l1", false, "q4_0 s=0 is not searched on sm_90"},
		{"q4_0", "r2f0u2s3w16l2a1", true, ""},
		{"q4_0", "r2f0u2s3w16l2", true, ""},
		{"q4_0", "r2f0u2s2w16l2a1", true, ""},
		{"q8_0", "r2f0u2s2w16l1a1", true, ""},
		{"q8_0", "r2f0u2s2w16l2a1", false, "q8_0 l=2 (tiles of 8 blocks) with s=2 is not searched"},
		{"q8_0", "r2f0u2s1w16l2a1", false, "q8_0 l=2 (tiles of 8 blocks) with s=1 is not searched"},
		{"q8_0", "r2f0u2s3w16l2a1", true, ""}, // s=3 has only the tiles
		{"q8_0", "r1f0u2s3w8l2", true, ""},
		{"q8_0", "r1f0u2s0w8", false, "q8_0 l=0"},
		{"q4_K", "r1f0u1s1w16a1", false, "q4_K l=0"},
		{"q4_K", "r1f0u1s1w16l1a1", false, "q4_K s=1"},
		{"q4_K", "r1f0u1s2w16l1a1", true, ""},
		{"q4_K", "r1f0u1s3w16l1a1", true, ""},
		{"affine4", "r1f0u4s1w16a1", false, "affine4 l=0"},
		{"affine4", "r1f0u4s1w16l1a1", false, "affine4 s=1"},
		{"affine4", "r1f0u4s3w16l1a1", true, ""},
		{"bf16", "r4f0u4s2w8", true, ""}, // bf16 has only raw bytes
		{"bf16", "r4f0u4s1w8", true, ""},
		{"bf16", "r4f0u4s0w8", true, ""},
		{"bf16", "r4f0u4s3w8", true, ""},      // its ring wins most bf16 jobs (docs/results.md)
		{"q8_0", "r2f0u2s1w16l1a1", true, ""}, // its s=1 stays beside the bulk ring
		{"q8_0", "r2f0u2s0w16l1", true, ""},
	}
	spaces := map[string]map[space.Params]string{}
	for _, tc := range tests {
		fam, err := variants.FamilyOf(tc.format)
		if err != nil {
			t.Fatal(err)
		}
		if spaces[tc.format] == nil {
			ok, excl := searchSpace(fam, lim, nil, true)
			m := map[space.Params]string{}
			for _, p := range ok {
				m[p] = ""
			}
			for _, x := range excl {
				m[x.Params] = x.Reason
			}
			spaces[tc.format] = m
		}
		p, err := space.Parse(tc.id)
		if err != nil {
			t.Fatal(err)
		}
		reason, inSpace := spaces[tc.format][p]
		if !inSpace {
			t.Fatalf("%s %s: neither searched nor excluded", tc.format, tc.id)
		}
		if (reason == "") != tc.searched || !strings.Contains(reason, tc.reason) {
			t.Errorf("%s %s: exclusion %q, want searched=%v with %q", tc.format, tc.id, reason, tc.searched, tc.reason)
		}
		// The space itself keeps every layout (GPU tests, forced variants).
		ok, _ := space.Enumerate(lim, variants.KnobsOf(fam), nil)
		found := false
		for _, q := range ok {
			found = found || q == p
		}
		if !found {
			t.Errorf("%s %s: missing from space.Enumerate", tc.format, tc.id)
		}
	}
}

// TestUntunedStagingArch: the stagings the bulk ring displaces are skipped
// only where it can run (sm_90 and newer).
func TestUntunedStagingArch(t *testing.T) {
	s1, _ := space.Parse("r2f0u2s1w16l1a1")
	s3, _ := space.Parse("r2f0u2s3w16l2a1")
	for _, tc := range []struct {
		name    string
		bulk    bool
		arch    space.Arch
		p       space.Params
		skipped bool
	}{
		{"q4_0", true, space.Arch{Major: 9, Minor: 0}, s1, true},
		{"q4_0", true, space.Arch{Major: 12, Minor: 0}, s1, true},
		{"q4_0", true, space.Arch{Major: 8, Minor: 6}, s1, false},
		{"q4_0", true, space.Arch{}, s1, false}, // unknown arch: keep
		{"q4_0", false, space.Arch{Major: 9, Minor: 0}, s1, false},
		{"q4_0", true, space.Arch{Major: 9, Minor: 0}, s3, false},
		{"q4_0", true, space.Arch{Major: 9, Minor: 0}, space.Stock, false},
		{"bf16", true, space.Arch{Major: 9, Minor: 0}, s1, false},
		{"q8_0", true, space.Arch{Major: 9, Minor: 0}, s1, false},
	} {
		c := searchContext{format: tc.name, repacked: tc.name != "bf16", bulk: tc.bulk, arch: tc.arch}
		if got := unsearched(c, tc.p) != ""; got != tc.skipped {
			t.Errorf("unsearched(%s, bulk=%v, %v, %s) skipped=%v, want %v", tc.name, tc.bulk, tc.arch, tc.p.ID(), got, tc.skipped)
		}
	}
}

// TestSearchSpaceFollowsCompiler: on sm_90 the 4-bit formats' s=1 (and
// s=0 beyond stock) are searched only when the compiler cannot build the
// bulk-copy ring that displaces them (an NVRTC older than 12.0), so such a
// tune still has more than one staging to choose from.
func TestSearchSpaceFollowsCompiler(t *testing.T) {
	lim, err := space.LimitsFor("sm_90")
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"q4_0", "q4_K", "affine4"} {
		fam, err := variants.FamilyOf(format)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			bulkBuilds bool
			wantS1     bool
		}{{true, false}, {false, true}} {
			ok, _ := searchSpace(fam, lim, nil, tc.bulkBuilds)
			s1, s3 := 0, 0
			for _, p := range ok {
				switch p.S {
				case 1:
					s1++
				case 3:
					s3++
				}
			}
			if (s1 > 0) != tc.wantS1 {
				t.Errorf("%s, bulk builds %v: %d s=1 variants searched, want some: %v", format, tc.bulkBuilds, s1, tc.wantS1)
			}
			// s=3 stays in the list either way: buildFormat prunes it
			// with the compiler's reason (compilerLacks).
			if s3 == 0 {
				t.Errorf("%s, bulk builds %v: no s=3 variant listed", format, tc.bulkBuilds)
			}
		}
	}
}

// TestSearchRulesSkipFewRingWarps: the rings with few warps are in the
// space (space.Check lets them run) but not searched.
func TestSearchRulesSkipFewRingWarps(t *testing.T) {
	p, _ := space.Parse("r1f0u2s2w4l1")
	c := searchContext{format: "q8_0", repacked: true, arch: space.Arch{Major: 9}}
	if why := unsearched(c, p); !strings.Contains(why, "s=2 with w=4 < 8") {
		t.Errorf("unsearched(%s) = %q", p.ID(), why)
	}
	lim, _ := space.LimitsFor("sm_90")
	if err := space.Check(p, lim, 16<<10); err != nil {
		t.Errorf("space.Check(%s) = %v: a search rule became a constraint", p.ID(), err)
	}
}
