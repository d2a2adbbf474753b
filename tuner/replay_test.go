package tuner

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
)

// sampleReplay is a simulation measurer over a real run's samples: each
// measurement of a candidate draws its samples, with replacement, from what
// the H200 measured for it. Strategies run on it exactly as on a GPU.
type sampleReplay struct {
	pool    map[string][]float64
	rng     *rand.Rand
	batches int
}

func (r *sampleReplay) measure(ids []string, rounds int) (map[string][]float64, error) {
	out := make(map[string][]float64, len(ids))
	for _, id := range ids {
		p := r.pool[id]
		if len(p) == 0 {
			return nil, fmt.Errorf("no samples for %s", id)
		}
		for i := 0; i < rounds; i++ {
			out[id] = append(out[id], p[r.rng.IntN(len(p))])
		}
	}
	r.batches += len(ids) * rounds
	return out, nil
}

// TestBudgetedReplay replays the exhaustive llama-3-8b run measured on the
// H200 (tuner/testdata/run5.json.gz, a first-session run, docs/data.md) through successive
// halving at several budgets, and reports how far its pick lands from the
// exhaustive optimum, in the exhaustive run's own medians. It asserts only
// what must hold whatever the budget: the pick is a measured candidate, and
// the spend stays near the budget; the figures are printed with -v.
func TestBudgetedReplay(t *testing.T) {
	f, err := os.Open("testdata/run5.json.gz")
	if err != nil {
		t.Skipf("skipping: no recorded run (%v)", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var ds []Decision
	if err := json.NewDecoder(zr).Decode(&ds); err != nil {
		t.Fatal(err)
	}
	for _, budget := range []int{400, 800, 1600} {
		worst, sum, spent, full := 0.0, 0.0, 0, 0
		for _, d := range ds {
			pool := map[string][]float64{}
			median := map[string]float64{}
			group := map[string]int{}
			var ids []string
			for _, c := range d.Candidates {
				if len(c.Samples) == 0 {
					continue
				}
				pool[c.ID], median[c.ID] = c.Samples, c.MedianUS
				if c.Class != "exact" {
					group[c.ID] = 1
				}
				if c.ID != d.Stock.ID {
					ids = append(ids, c.ID)
				}
			}
			groupOf := func(id string) int { return group[id] }
			optimum := median[d.Winner.ID]
			for _, id := range ids {
				if group[id] == group[d.Winner.ID] && median[id] < optimum {
					optimum = median[id]
				}
			}
			r := &sampleReplay{pool: pool, rng: rand.New(rand.NewPCG(uint64(budget), uint64(len(ids))))}
			res, err := halving(r, ids, d.Stock.ID, budget, groupOf)
			if err != nil {
				t.Fatal(err)
			}
			pick := ""
			for _, id := range best(res.final, len(res.final), d.Stock.ID) {
				if group[id] == group[d.Winner.ID] {
					pick = id
					break
				}
			}
			if _, ok := median[pick]; !ok {
				t.Fatalf("%s %s: halving picked %q, not a measured candidate", d.Format, d.Shape(), pick)
			}
			gap := median[pick]/optimum - 1
			worst, sum = max(worst, gap), sum+gap
			spent += r.batches
			full += len(ids)*screenRounds + (nFinalists+1)*finalRounds
			if r.batches > budget+2*len(ids) {
				t.Errorf("%s %s: spent %d batches on a budget of %d", d.Format, d.Shape(), r.batches, budget)
			}
		}
		t.Logf("budget %4d: worst gap %.1f %%, mean %.2f %%, %d batches = %.0f %% of exhaustive's %d",
			budget, 100*worst, 100*sum/float64(len(ds)), spent, 100*float64(spent)/float64(full), full)
	}
}
