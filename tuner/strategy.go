package tuner

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
)

// measurer times candidates interleaved in rounds and returns µs-per-launch
// samples per ID. The worker implements it on a GPU; tests replay stored
// samples, so strategies are tested without one.
type measurer interface {
	measure(ids []string, rounds int) (map[string][]float64, error)
}

// Strategy constants: a screening pass over every candidate, then the
// finalists and stock re-measured together, interleaved, for the decision.
const (
	screenRounds = 7
	finalRounds  = 21
	nFinalists   = 4
)

// stageResult is what a strategy found out.
type stageResult struct {
	screen    map[string][]float64 // last samples of every candidate measured
	droppedAt map[string]int       // stage at which a candidate was dropped (halving)
	final     map[string][]float64 // finalists and stock, measured together
	batches   int                  // timed batches spent
}

// strategy is one way of spending a job's timed batches (searchInput);
// strategies names them for Options.Search and the replay evaluation.
type strategy func(m measurer, in searchInput) (stageResult, error)

var strategies = map[string]strategy{
	"exhaustive": func(m measurer, in searchInput) (stageResult, error) {
		return exhaustive(m, in.ids, in.stock, in.groupOf)
	},
	"halving": func(m measurer, in searchInput) (stageResult, error) {
		return halving(m, in.ids, in.stock, in.budget, in.groupOf)
	},
	"race": race,
}

// SearchNames lists the strategies Options.Search accepts, sorted.
func SearchNames() []string { return slices.Sorted(maps.Keys(strategies)) }

// jobPlan is how one job is searched: the strategy, its budget and prior.
type jobPlan struct {
	name   string
	search strategy
	budget int // timed batches; 0: exhaustive
	// searchShare, when positive, replaces budget once the job knows its
	// measured candidates: their finals and this share of their search.
	searchShare float64
	prior       map[string]float64
}

// Strategies take the candidate IDs without stock; stock is measured with
// the finalists. groupOf splits candidates into groups that are selected
// separately (the tuner groups by correctness class, so an engine that
// requires exact output still gets the best exact variant when int8
// activations win overall); nil means one group.

// exhaustive measures every candidate screenRounds times, then the best
// nFinalists with stock for finalRounds.
func exhaustive(m measurer, ids []string, stock string, groupOf func(string) int) (stageResult, error) {
	res := stageResult{screen: map[string][]float64{}, droppedAt: map[string]int{}}
	if len(ids) == 0 {
		return res, finals(m, &res, nil, stock)
	}
	s, err := m.measure(ids, screenRounds)
	if err != nil {
		return res, err
	}
	res.screen = s
	res.batches = len(ids) * screenRounds
	return res, finals(m, &res, perGroup(s, ids, stock, groupOf, func(int) int { return nFinalists }), stock)
}

// halving is successive halving under a budget of timed batches: every
// candidate gets a short measurement, the faster half a longer one, and so
// on until nFinalists remain, which are measured with stock as in
// exhaustive. The budget left after the final measurement is split evenly
// over the stages, so later stages, with fewer candidates, take more rounds
// each (at least one round per candidate and stage).
func halving(m measurer, ids []string, stock string, budget int, groupOf func(string) int) (stageResult, error) {
	res := stageResult{screen: map[string][]float64{}, droppedAt: map[string]int{}}
	stages := 1
	for n := largestGroup(ids, groupOf); n > nFinalists; n = (n + 1) / 2 {
		stages++
	}
	perStage := max(0, budget-(nFinalists+1)*finalRounds) / stages
	alive := append([]string(nil), ids...)
	for k := 0; len(alive) > 0; k++ {
		rounds := max(1, perStage/len(alive))
		s, err := m.measure(alive, rounds)
		if err != nil {
			return res, err
		}
		res.batches += len(alive) * rounds
		for id, v := range s {
			res.screen[id] = v
		}
		if largestGroup(alive, groupOf) <= nFinalists {
			break
		}
		keep := perGroup(s, alive, stock, groupOf, func(n int) int { return (n + 1) / 2 })
		kept := map[string]bool{}
		for _, id := range keep {
			kept[id] = true
		}
		for _, id := range alive {
			if !kept[id] {
				res.droppedAt[id] = k
			}
		}
		alive = keep
	}
	return res, finals(m, &res, alive, stock)
}

// finals measures the finalists together with stock.
func finals(m measurer, res *stageResult, fin []string, stock string) error {
	ids := append([]string{stock}, fin...)
	s, err := m.measure(ids, finalRounds)
	if err != nil {
		return err
	}
	res.final = s
	res.batches += len(ids) * finalRounds
	return nil
}

// perGroup returns, fastest first, the keep(n) fastest IDs of each group,
// where n is the group's size among ids.
func perGroup(samples map[string][]float64, ids []string, stock string, groupOf func(string) int, keep func(n int) int) []string {
	if groupOf == nil {
		groupOf = func(string) int { return 0 }
	}
	size := map[int]int{}
	for _, id := range ids {
		size[groupOf(id)]++
	}
	taken := map[int]int{}
	var out []string
	for _, id := range best(samples, len(samples), stock) {
		g := groupOf(id)
		if taken[g] < keep(size[g]) {
			taken[g]++
			out = append(out, id)
		}
	}
	return out
}

// largestGroup returns the size of the largest group among ids.
func largestGroup(ids []string, groupOf func(string) int) int {
	if groupOf == nil {
		return len(ids)
	}
	size := map[int]int{}
	n := 0
	for _, id := range ids {
		g := groupOf(id)
		size[g]++
		n = max(n, size[g])
	}
	return n
}

// best returns up to n IDs with the lowest median, stock excluded, fastest
// first (ties by ID so runs are reproducible).
func best(samples map[string][]float64, n int, stock string) []string {
	type kv struct {
		id  string
		med float64
	}
	var all []kv
	for id, v := range samples {
		if id == stock {
			continue
		}
		med, _, _ := summarize(v)
		if !math.IsNaN(med) {
			all = append(all, kv{id, med})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].med != all[j].med {
			return all[i].med < all[j].med
		}
		return all[i].id < all[j].id
	})
	out := make([]string, 0, n)
	for i := 0; i < len(all) && i < n; i++ {
		out = append(out, all[i].id)
	}
	return out
}

func (r stageResult) String() string {
	return fmt.Sprintf("%d screened, %d finalists, %d batches", len(r.screen), len(r.final)-1, r.batches)
}
