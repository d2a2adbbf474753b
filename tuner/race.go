package tuner

import (
	"cmp"
	"hash/fnv"
	"slices"

	"github.com/gemvtune/gemvtune/space"
)

// searchInput is what a strategy knows of a job before timing anything.
type searchInput struct {
	ids     []string // the verified candidates, stock excluded
	stock   string
	budget  int              // timed batches for the job; 0: no limit
	groupOf func(string) int // selection groups (correctness classes); nil: one
	// prior is each candidate's time relative to the best of its job at
	// other shapes of the same format and GPU (1 = the best there), from
	// this run's earlier jobs or the cache; nil or missing: unknown. It
	// orders what is measured first, never replaces a measurement.
	prior map[string]float64
}

// Racing constants.
const (
	// raceRounds is the fewest samples a candidate has before it may be
	// dropped (one sample never decides), and what the first screen and
	// every newcomer get.
	raceRounds = 2
	// raceScreenShare is the share of the search budget (after the finals'
	// reserve) spent on the first screen; the rest refines the survivors
	// and explores the best ones' neighbours.
	raceScreenShare = 0.7
	// raceExplore is the share of the first screen given to candidates
	// the prior does not know (when it knows some).
	raceExplore = 0.3
	// raceNeighbours is how many of each group's best have their
	// unmeasured one-knob neighbours added after each step.
	raceNeighbours = 2
	// raceMaxSteps bounds the race when nothing else ends it (ties that
	// never separate, no budget).
	raceMaxSteps = 48
)

// race is the budgeted search: a race among the most promising candidates
// (by the prior, else a deterministic spread over the space), in which a
// candidate is dropped only when its samples are clearly behind the
// nFinalists-th best of its group (its fastest sample slower than that
// one's slowest, after at least raceRounds samples each), the best ones'
// neighbours in the space (one knob apart) join as the race goes, and the
// nFinalists fastest per group meet stock in the finals as in exhaustive.
// Every measurement interleaves its candidates round by round, so a drift
// of the GPU's clocks during a step shifts them all alike.
func race(m measurer, in searchInput) (stageResult, error) {
	res := stageResult{screen: map[string][]float64{}, droppedAt: map[string]int{}}
	groupOf := in.groupOf
	if groupOf == nil {
		groupOf = func(string) int { return 0 }
	}
	order := raceOrder(in.ids, in.prior)
	byGroup := map[int][]string{}
	var groups []int
	for _, id := range order {
		g := groupOf(id)
		if _, ok := byGroup[g]; !ok {
			groups = append(groups, g)
		}
		byGroup[g] = append(byGroup[g], id)
	}
	cost := exhaustiveCost(len(in.ids), len(groups))
	budget := in.budget
	if budget <= 0 {
		budget = cost.exhaustive // no budget: what exhaustive would spend
	}
	search := budget - cost.finals
	// The first screen: each group's most promising, in proportion to its
	// size (at least nFinalists+1 each where it has them), a raceExplore
	// share of it from the candidates the prior knows nothing of, so what
	// earlier jobs did not measure gets measured some time.
	screenN := max(int(float64(search)*raceScreenShare)/raceRounds, 1)
	var alive []string
	for _, g := range groups {
		members := byGroup[g]
		n := min(len(members), max(nFinalists+1, screenN*len(members)/max(1, len(order))))
		var known, unknown []string
		for _, id := range members {
			if _, ok := in.prior[priorKey(id)]; ok {
				known = append(known, id)
			} else {
				unknown = append(unknown, id)
			}
		}
		explore := min(len(unknown), int(raceExplore*float64(n)))
		if len(known) < n-explore {
			explore = min(len(unknown), n-len(known))
		}
		alive = append(alive, known[:n-explore]...)
		alive = append(alive, unknown[:explore]...)
	}
	samples := res.screen // a candidate is measured when it has samples
	measure := func(ids []string, rounds int) error {
		s, err := m.measure(ids, rounds)
		if err != nil {
			return err
		}
		res.batches += len(ids) * rounds
		for _, id := range ids {
			samples[id] = append(samples[id], s[id]...)
		}
		return nil
	}
	if len(alive) > 0 {
		if err := measure(alive, raceRounds); err != nil {
			return res, err
		}
	}
	neighbours := newNeighbourIndex(in.ids)
	for step := 1; step <= raceMaxSteps; step++ {
		// Drop what is clearly behind the nFinalists-th best of its group;
		// the rest, fastest first, pick the newcomers: the unmeasured
		// neighbours of each group's best.
		var keep, fresh []string
		contenders := 0
		for _, g := range groups {
			ranked := rankByMedian(filterGroup(alive, groupOf, g), samples)
			if len(ranked) > nFinalists {
				refHi := slices.Max(samples[ranked[nFinalists-1]])
				kept := ranked[:0:0]
				for _, id := range ranked {
					if len(samples[id]) >= raceRounds && slices.Min(samples[id]) > refHi {
						res.droppedAt[id] = step
						continue
					}
					kept = append(kept, id)
				}
				ranked = kept
			}
			keep = append(keep, ranked...)
			contenders += max(0, len(ranked)-nFinalists)
			for _, id := range ranked[:min(raceNeighbours, len(ranked))] {
				for _, nb := range neighbours.of(id) {
					if _, measured := samples[nb]; !measured && !slices.Contains(fresh, nb) {
						fresh = append(fresh, nb)
					}
				}
			}
		}
		alive = keep
		// A step with newcomers gives everyone raceRounds more samples,
		// interleaved; without, one more round decides among the rest.
		left := search - res.batches
		if room := left/raceRounds - len(alive); room < len(fresh) {
			fresh = fresh[:max(0, room)]
		}
		rounds := raceRounds
		if len(fresh) == 0 {
			if contenders == 0 || len(alive) > left {
				break
			}
			rounds = 1
		}
		next := append(slices.Clone(alive), fresh...)
		if err := measure(next, rounds); err != nil {
			return res, err
		}
		alive = next
	}
	var fin []string
	for _, g := range groups {
		ranked := rankByMedian(filterGroup(alive, groupOf, g), samples)
		fin = append(fin, ranked[:min(nFinalists, len(ranked))]...)
	}
	return res, finals(m, &res, fin, in.stock)
}

// raceOrder is the order race takes candidates in: by the prior where
// there is one, the rest after them in a fixed pseudo-random order (a hash
// of the ID), which spreads a screen over the whole space.
func raceOrder(ids []string, prior map[string]float64) []string {
	out := slices.Clone(ids)
	hash := func(id string) uint64 {
		h := fnv.New64a()
		h.Write([]byte(id))
		return h.Sum64()
	}
	slices.SortStableFunc(out, func(a, b string) int {
		pa, oka := prior[priorKey(a)]
		pb, okb := prior[priorKey(b)]
		switch {
		case oka && okb && pa != pb:
			return cmp.Compare(pa, pb)
		case oka != okb:
			if oka {
				return -1
			}
			return 1
		}
		return cmp.Compare(hash(a), hash(b))
	})
	return out
}

// neighbourIndex finds, for an ID, the IDs among ids one knob away from
// it, on demand (race asks for a few per step).
type neighbourIndex struct {
	ids  []string
	vals map[string][]int // knob values in space.Knobs order
	memo map[string][]string
}

func newNeighbourIndex(ids []string) *neighbourIndex {
	n := &neighbourIndex{ids: ids, vals: map[string][]int{}, memo: map[string][]string{}}
	for _, id := range ids {
		if p, err := space.Parse(id); err == nil {
			n.vals[id] = p.Values()
		}
	}
	return n
}

func (n *neighbourIndex) of(id string) []string {
	if out, ok := n.memo[id]; ok {
		return out
	}
	va, ok := n.vals[id]
	var out []string
	for _, b := range n.ids {
		vb, okb := n.vals[b]
		if !ok || !okb || b == id {
			continue
		}
		diff := 0
		for i := range va {
			if va[i] != vb[i] {
				diff++
			}
		}
		if diff == 1 {
			out = append(out, b)
		}
	}
	n.memo[id] = out
	return out
}

func filterGroup(ids []string, groupOf func(string) int, g int) []string {
	var out []string
	for _, id := range ids {
		if groupOf(id) == g {
			out = append(out, id)
		}
	}
	return out
}

// rankByMedian orders ids by the median of their samples, fastest first
// (ties by ID).
func rankByMedian(ids []string, samples map[string][]float64) []string {
	med := map[string]float64{}
	for _, id := range ids {
		med[id], _, _ = summarize(samples[id])
	}
	out := slices.Clone(ids)
	slices.SortFunc(out, func(a, b string) int {
		if c := cmp.Compare(med[a], med[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return out
}

// jobCost is what exhaustive spends on a job: all of it, and its finals
// (stock and nFinalists per selection group, finalRounds each).
type jobCost struct{ exhaustive, finals int }

// exhaustiveCost is a job's cost with n candidates in groups selection
// groups.
func exhaustiveCost(n, groups int) jobCost {
	f := (min(n, nFinalists*max(1, groups)) + 1) * finalRounds
	return jobCost{exhaustive: n*screenRounds + f, finals: f}
}

// searchShare is the share of every job's search (its exhaustive cost
// less its finals) that a run spending share of the exhaustive run's timed
// batches can give each job once every job's finals are paid: the same
// for all, so big jobs get most of the batches, as in exhaustive. 0 when
// the finals alone take share or more.
func searchShare(costs []jobCost, share float64) float64 {
	pool, search := 0.0, 0.0
	for _, c := range costs {
		pool += share*float64(c.exhaustive) - float64(c.finals)
		search += float64(c.exhaustive - c.finals)
	}
	if pool <= 0 || search <= 0 {
		return 0
	}
	return min(1, pool/search)
}

// budget is the job's timed batches under a search share: its finals and
// that share of its search.
func (c jobCost) budget(searchShare float64) int {
	return c.finals + int(searchShare*float64(c.exhaustive-c.finals))
}
