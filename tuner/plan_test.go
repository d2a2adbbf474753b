package tuner

import (
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

func TestPlan(t *testing.T) {
	jobs := []Job{{"q4_0", 4096, 14336}, {"bf16", 1024, 4096}, {"q4_K", 28672, 8192}}
	for _, arch := range []string{"sm_70", "sm_90"} {
		plan, err := Plan(arch, jobs, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(plan) != len(jobs) {
			t.Fatalf("%s: %d entries for %d jobs", arch, len(plan), len(jobs))
		}
		for _, e := range plan {
			if e.Candidates == 0 || e.Excluded == 0 || e.Expected <= 0 || len(e.Reasons) == 0 {
				t.Errorf("%s: %+v", arch, e)
			}
		}
	}
	// s=1 at 14336 cols needs 56 KB of shared memory: over sm_70's 48 KB
	// default but under its 96 KB opt-in; at 28672 cols on sm_75 (64 KB) it can't.
	plan, err := Plan("sm_75", []Job{{"q4_0", 4096, 28672}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for r := range plan[0].Reasons {
		found = found || strings.Contains(r, "smem")
	}
	if !found {
		t.Errorf("sm_75 4096x28672: no shared-memory exclusion among %v", plan[0].Reasons)
	}
	for _, bad := range []struct {
		arch string
		jobs []Job
	}{{"sm90", jobs}, {"sm_90", []Job{{"q5_1", 64, 64}}}, {"sm_90", []Job{{"q4_0", 64, 65}}}, {"sm_90", nil}} {
		if _, err := Plan(bad.arch, bad.jobs, 0); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("Plan(%q, %v) = %v, want a one-line error", bad.arch, bad.jobs, err)
		}
	}
}

func TestPruneUnboundFloors(t *testing.T) {
	mk := func(id string, regs int) Candidate {
		p, err := space.Parse(id)
		if err != nil {
			t.Fatal(err)
		}
		return Candidate{ID: id, Params: p, Status: StatusOK, Registers: regs}
	}
	cands := []Candidate{mk("r2f3u1s0w8", 40), mk("r2f0u1s0w8", 40), mk("r2f4u1s0w8", 32), mk("r2f6u1s0w8", 32), mk("r1f0u1s0w8", 40)}
	pruneUnboundFloors(cands)
	want := map[string]Status{"r2f0u1s0w8": StatusOK, "r2f3u1s0w8": StatusPruned, "r2f4u1s0w8": StatusOK, "r2f6u1s0w8": StatusPruned, "r1f0u1s0w8": StatusOK}
	for _, c := range cands {
		if c.Status != want[c.ID] {
			t.Errorf("%s: %s (%s), want %s", c.ID, c.Status, c.Reason, want[c.ID])
		}
	}
}

// Every family yields compilable sources for the whole space of an arch,
// stock first, and the two-phase build's phase 1 is never empty.
func TestSourcesForEveryFamily(t *testing.T) {
	lim, err := space.LimitsFor("sm_90")
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range variants.Families() {
		srcs, err := sourcesFor(fam, lim, nil, true)
		if err != nil {
			t.Fatalf("%s: %v", fam.Format().Name(), err)
		}
		if len(srcs) < 2 || srcs[0].ID != space.Stock.ID() {
			t.Fatalf("%s: %d sources, first %q", fam.Format().Name(), len(srcs), srcs[0].ID)
		}
		acts := map[int]bool{}
		for _, s := range srcs {
			if err := fam.Gate(s.Params, 4096, 4096); err != nil {
				t.Errorf("%s %s: source made for a variant the gate refuses: %v", fam.Format().Name(), s.ID, err)
			}
			acts[s.Params.A] = true
		}
		for _, a := range fam.Activations() {
			if !acts[a] {
				t.Errorf("%s: no source with a=%d", fam.Format().Name(), a)
			}
		}
	}
	if _, err := sourcesFor(variants.Families()[0], lim, []string{"r1f0u1s0w8a1"}, true); err == nil {
		t.Error("an explicit invalid ID was silently skipped")
	}
}

// TestGeneraliseKeepsNames: measures fold to N, names and knob values
// stay (sm_80, llama-3-8b, bf16, s=3).
func TestGeneraliseKeepsNames(t *testing.T) {
	for in, want := range map[string]string{
		"s=3 copies weights with bulk copies (cp.async.bulk, TMA), which sm_80 lacks (sm_90 and newer)": "s=3 copies weights with bulk copies (cp.async.bulk, TMA), which sm_80 lacks (sm_90 and newer)",
		"smem 72 KB > 48 KB opt-in cap of sm_86":                                                        "smem N KB > N KB opt-in cap of sm_86",
		"r=8 × u=4 = 32 chunk loads in flight per lane > 16":                                            "r=8 × u=4 = N chunk loads in flight per lane > N",
		"bf16 needs cols a multiple of 8, got 4100 at every llama-3-8b shape":                           "bf16 needs cols a multiple of N, got N at every llama-3-8b shape",
		"shape 4096x14336": "shape NxN",
	} {
		if got := generalise(in); got != want {
			t.Errorf("generalise(%q)\n = %q\nwant %q", in, got, want)
		}
	}
}

// Under a share, the plan gives every job one search share, and each
// job's budget is its finals plus that share of the search of the
// candidates it is expected to time (fewer than its candidates: most
// floors are never timed), so the run spends the share.
func TestPlanShare(t *testing.T) {
	jobs := []Job{{"q4_0", 4096, 14336}, {"q4_0", 1024, 4096}, {"q8_0", 28672, 4096}, {"f16", 4096, 4096}}
	plan, err := PlanShare("sm_90", jobs, 0.25)
	if err != nil {
		t.Fatal(err)
	}
	spent, exhaustive := 0, 0
	for _, e := range plan {
		fam, _ := variants.FamilyOf(e.Format)
		c := exhaustiveCost(e.Measured, len(fam.Activations()))
		if e.Measured <= 0 || e.Measured >= e.Candidates {
			t.Errorf("%s %s: %d expected measured of %d candidates", e.Format, e.Shape(), e.Measured, e.Candidates)
		}
		if e.SearchShare <= 0 || e.SearchShare != plan[0].SearchShare || e.Budget != c.budget(e.SearchShare) {
			t.Errorf("%s %s: budget %d, search share %v; want %d at the run's one share %v", e.Format, e.Shape(), e.Budget, e.SearchShare, c.budget(plan[0].SearchShare), plan[0].SearchShare)
		}
		spent += e.Budget
		exhaustive += c.exhaustive
	}
	if share := float64(spent) / float64(exhaustive); share < 0.24 || share > 0.25 {
		t.Errorf("the budgets add up to %.3f of the exhaustive batches, want 0.25", share)
	}
	if plan, _ := PlanShare("sm_90", jobs, 1); plan[0].Budget != 0 || plan[0].SearchShare != 0 {
		t.Errorf("share 1 is exhaustive: %+v", plan[0])
	}
}
