package tuner

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gemvtune/gemvtune/variants"
)

// ShardSpec is part I of N of a job list (autotune --shard I/N).
type ShardSpec struct{ I, N int }

// ParseShard reads "I/N" with 0 ≤ I < N, e.g. "2/4".
func ParseShard(s string) (ShardSpec, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return ShardSpec{}, fmt.Errorf("shard %q: want I/N with 0 ≤ I < N, e.g. 0/2 (a Kubernetes Indexed Job passes $(JOB_COMPLETION_INDEX)/N)", s)
	}
	return ShardSpec{I: i, N: n}, nil
}

func (s ShardSpec) String() string { return fmt.Sprintf("%d/%d", s.I, s.N) }

// Shard returns part s.I of s.N of jobs, in the jobs' order. The parts of
// one job list are disjoint and cover it, and depend only on the list, so
// N machines that each run their own part tune the whole list once.
//
// A format's candidates are compiled once per run for all its shapes, so
// while there are at least as many formats as parts, whole formats go to
// parts; with more parts than formats, single jobs do. Either way the
// units go, largest first, to the part with the least work so far (ties:
// the lower part), a job's work counted as its weight bytes plus a fixed
// 64 MiB for what every job pays whatever its size (compiles, the ceiling,
// warm-up and launches).
func Shard(jobs []Job, s ShardSpec) []Job {
	if s.N <= 1 {
		return slices.Clone(jobs)
	}
	type unit struct {
		idx  []int // indexes into jobs
		work int64
	}
	var units []unit
	byFormat := map[string]int{}
	perFormat := len(JobFormats(jobs)) >= s.N
	for i, j := range jobs {
		w := jobWork(j)
		if u, ok := byFormat[j.Format]; ok && perFormat {
			units[u].idx = append(units[u].idx, i)
			units[u].work += w
			continue
		}
		byFormat[j.Format] = len(units)
		units = append(units, unit{idx: []int{i}, work: w})
	}
	order := make([]int, len(units))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(units[b].work, units[a].work) })
	load := make([]int64, s.N)
	owner := make([]int, len(jobs))
	for _, u := range order {
		p := slices.Index(load, slices.Min(load))
		load[p] += units[u].work
		for _, i := range units[u].idx {
			owner[i] = p
		}
	}
	var out []Job
	for i, j := range jobs {
		if owner[i] == s.I {
			out = append(out, j)
		}
	}
	return out
}

// jobWork is Shard's measure of a job: its weight bytes plus a fixed part.
func jobWork(j Job) int64 {
	const fixed = 64 << 20
	f, err := variants.FormatOf(j.Format)
	if err != nil {
		return fixed
	}
	n, err := f.Bytes(j.Rows, j.Cols)
	if err != nil {
		return fixed
	}
	return n + fixed
}

// JobFormats returns the formats of jobs, each once, in their order.
func JobFormats(jobs []Job) []string {
	var out []string
	for _, j := range jobs {
		if !slices.Contains(out, j.Format) {
			out = append(out, j.Format)
		}
	}
	return out
}
