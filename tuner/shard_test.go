package tuner

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune/variants"
)

// fakeJobs is a preset-like job list: every format at seven shapes, plus
// a few odd ones.
func fakeJobs() []Job {
	var jobs []Job
	for _, f := range variants.FormatNames {
		for _, s := range [][2]int{{4096, 4096}, {1024, 4096}, {6144, 4096}, {14336, 4096}, {28672, 4096}, {4096, 14336}, {128256, 4096}} {
			jobs = append(jobs, Job{Format: f, Rows: s[0], Cols: s[1]})
		}
	}
	return append(jobs, Job{Format: "q4_0", Rows: 37, Cols: 256}, Job{Format: "bf16", Rows: 5, Cols: 8})
}

func TestShardCoversOnce(t *testing.T) {
	for _, jobs := range [][]Job{fakeJobs(), fakeJobs()[:3], fakeJobs()[:1], nil} {
		for n := 1; n <= 8; n++ {
			seen := map[Job]int{}
			var sizes []int
			for i := 0; i < n; i++ {
				part := Shard(jobs, ShardSpec{I: i, N: n})
				sizes = append(sizes, len(part))
				for _, j := range part {
					seen[j]++
				}
				// Deterministic: the same part twice.
				if again := Shard(jobs, ShardSpec{I: i, N: n}); fmt.Sprint(again) != fmt.Sprint(part) {
					t.Fatalf("n=%d part %d differs between calls", n, i)
				}
			}
			for _, j := range jobs {
				if seen[j] != 1 {
					t.Fatalf("%d jobs, n=%d: %s %s in %d parts, want 1 (part sizes %v)", len(jobs), n, j.Format, j.Shape(), seen[j], sizes)
				}
			}
			if len(seen) != len(jobs) {
				t.Fatalf("n=%d: parts hold %d jobs, want %d", n, len(seen), len(jobs))
			}
		}
	}
}

// With at least as many formats as parts, a format's jobs stay in one part
// (its candidates compile once), and the parts' work is balanced.
func TestShardKeepsFormatsTogether(t *testing.T) {
	jobs := fakeJobs()
	for n := 2; n <= len(variants.FormatNames); n++ {
		var loads []int64
		for i := 0; i < n; i++ {
			var load int64
			formats := map[string]bool{}
			for _, j := range Shard(jobs, ShardSpec{I: i, N: n}) {
				formats[j.Format] = true
				load += jobWork(j)
			}
			for f := range formats {
				for k := 0; k < n; k++ {
					if k == i {
						continue
					}
					for _, j := range Shard(jobs, ShardSpec{I: k, N: n}) {
						if j.Format == f {
							t.Fatalf("n=%d: %s in parts %d and %d", n, f, i, k)
						}
					}
				}
			}
			loads = append(loads, load)
		}
		t.Logf("n=%d: work per part %v", n, loads)
	}
}

func TestParseShard(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // "" : an error
	}{
		{"0/1", "0/1"}, {"1/2", "1/2"}, {" 3 / 8", "3/8"},
		{"2/2", ""}, {"-1/2", ""}, {"0/0", ""}, {"1", ""}, {"a/b", ""}, {"$(JOB_COMPLETION_INDEX)/4", ""},
	} {
		s, err := ParseShard(tc.in)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("ParseShard(%q) = %v, want an error", tc.in, s)
		case tc.want == "" && !strings.Contains(err.Error(), "0 ≤ I < N"):
			t.Errorf("ParseShard(%q): %v does not say what is accepted", tc.in, err)
		case tc.want != "" && (err != nil || s.String() != tc.want):
			t.Errorf("ParseShard(%q) = %v, %v, want %s", tc.in, s, err, tc.want)
		}
	}
}
