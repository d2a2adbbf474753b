package tuner

import (
	"bytes"
	"slices"
	"testing"

	"github.com/gemvtune/gemvtune/space"
)

// mustParse is the variant id's knobs; a bad id fails the test.
func mustParse(t *testing.T, id string) space.Params {
	t.Helper()
	q, err := space.Parse(id)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func TestRowGroupsFor(t *testing.T) {
	p := func(id string) space.Params { return mustParse(t, id) }
	for _, tc := range []struct {
		id                     string
		rows, blocksPerSM, sms int
		want                   int
	}{
		// 28672 rows / 16 = 1792 groups; 2 blocks/SM × 132 = 264: g=7 (256 blocks).
		{"r1f0u4s1w16l1a1", 28672, 2, 132, 7},
		// 28672 / 32 = 896 groups, 264 resident: g=4 (224; g=3 would be 299).
		{"r2f0u2s1w16l1a1", 28672, 2, 132, 4},
		// 448 groups, 132 resident: g=4 (112 blocks), not 2 (224 > 132).
		{"r4f0u1s1w16a1", 28672, 1, 132, 4},
		// Fits one wave already: no twin.
		{"r1f0u2s1w16a1", 4096, 2, 132, 0},
		// 4224 / 16 = 264 groups over 132 resident blocks: g=2.
		{"r1f0u2s1w16a1", 4224, 1, 132, 2},
		// Exactly one wave is enough.
		{"r1f0u1s1w8", 132 * 8, 1, 132, 0},
		{"r1f0u1s1w8", 132*8 + 1, 1, 132, 2},
		// Nothing resident: no twin.
		{"r1f0u1s1w8", 28672, 0, 132, 0},
		// More groups than g's largest value covers: the largest.
		{"r1f0u1s1w2", 1 << 20, 1, 4, 255},
	} {
		got := rowGroupsFor(p(tc.id), tc.rows, tc.blocksPerSM, tc.sms)
		if got != tc.want {
			t.Errorf("rowGroupsFor(%s, %d rows, %d/SM × %d SMs) = %d, want %d", tc.id, tc.rows, tc.blocksPerSM, tc.sms, got, tc.want)
		}
	}
}

func TestWithTwins(t *testing.T) {
	base, _ := space.Parse("r1f0u4s1w16l1a1")
	other, _ := space.Parse("r2f0u1s1w8")
	comp := []compiled{
		{source: source{ID: base.ID(), Params: base}, Cubin: []byte("A"), Registers: 57},
		{source: source{ID: other.ID(), Params: other}, Cubin: []byte("B"), Registers: 40, Spills: 8},
	}
	attrs := map[string]moduleAttrs{
		base.ID():             {},
		other.ID():            {},
		"r1f0u4s1w16g8l1a1":   {},
		"r2f0u1s1w8g16":       {},
		"r8f0u1s1w8g4":        {}, // no compiled base: ignored
		"not-an-id":           {},
		"r1f0u4s1w16l1a1-old": {},
	}
	got := withTwins(comp, attrs)
	if len(got) != 4 || got[0].ID != base.ID() || got[1].ID != other.ID() {
		t.Fatalf("withTwins kept %d entries: %v", len(got), got)
	}
	for i, want := range []struct {
		id    string
		g     int
		cubin string
		regs  int
	}{{"r1f0u4s1w16g8l1a1", 8, "A", 57}, {"r2f0u1s1w8g16", 16, "B", 40}} {
		c := got[2+i]
		if c.ID != want.id || c.Params.G != want.g || !bytes.Equal(c.Cubin, []byte(want.cubin)) || c.Registers != want.regs || c.Params.ID() != want.id {
			t.Errorf("twin %d = %+v, want %s sharing cubin %s", i, c, want.id, want.cubin)
		}
	}
	if got[3].Spills != 8 {
		t.Errorf("a twin must carry its base's spills (pruned alike): %+v", got[3])
	}
	if len(comp) != 2 || comp[0].ID != base.ID() {
		t.Errorf("withTwins changed its input: %v", comp)
	}
}

func TestRowGroupTwins(t *testing.T) {
	for _, tc := range []struct {
		id                     string
		rows, blocksPerSM, sms int
		want                   []int
	}{
		// s=1: the one wave at the resident blocks only.
		{"r1f0u4s1w16l1a1", 28672, 2, 132, []int{7}},
		// A ring with two resident blocks: g=4 (224 blocks) and, at one
		// block per SM, g=7 (128 blocks).
		{"r2f0u2s3w16l2a1", 28672, 2, 132, []int{4, 7}},
		{"r2f0u2s2w16l1a1", 28672, 2, 132, []int{4, 7}},
		// One resident block: one twin.
		{"r4f0u2s2w16l1a1", 28672, 1, 132, []int{4}},
		// The plain grid fits at occupancy, not at one block per SM.
		{"r1f0u2s3w16l2a1", 4096, 2, 132, []int{2}},
		// Both give the same g: once.
		{"r1f0u1s3w8", 132*8 + 1, 2, 132, []int{2}},
		// Nothing resident: none.
		{"r1f0u1s3w8", 28672, 0, 132, nil},
	} {
		p, err := space.Parse(tc.id)
		if err != nil {
			t.Fatal(err)
		}
		got := rowGroupTwins(p, tc.rows, tc.blocksPerSM, tc.sms)
		if !slices.Equal(got, tc.want) {
			t.Errorf("rowGroupTwins(%s, %d rows, %d/SM × %d SMs) = %v, want %v", tc.id, tc.rows, tc.blocksPerSM, tc.sms, got, tc.want)
		}
	}
}
