package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/gemvtune/gemvtune/tuner"
)

func init() {
	register(&command{name: "compare", short: "compare the winners of two runs (autotune --json outputs)",
		run: func(_ context.Context, args []string) error { return compareMain(args, os.Stdout, os.Stderr) }})
}

const compareUsage = `usage: autotune compare A.json[.gz] B.json[.gz]

Compares two runs' decisions (the output of autotune --json) per (arch,
format, shape). For each it prints both winners with their medians and 95 %
intervals, and how B's winner measured inside run A, where every candidate
was timed: "same" (one winner), "equivalent" (the medians differ by less
than the runs' spread), "runs disagree" (each run timed both winners and
ranks its own ahead, intervals apart: the runs measured a kernel
differently), or the gap in %. Use it to check that two runs
agree, or how far a budgeted run (--budget, B) lands from an exhaustive one
(A). Closing lines count the verdicts and, for runs that record them, the
timed batches against what exhaustive search would have timed.

Runs on two machines differ by the machines too (on the H200 device the
read ceiling of a run ranged over 6 %), so two more columns give B's
winner against A's with each time scaled by its own run's yardstick:
PER CEILING (µs × ceiling GB/s: bytes at the ceiling's rate) and PER READ
(µs / the same-bytes read µs, when both runs measured it). When a format's
kernel sources differ between the runs, a closing line says so: "B's
winner in A" is then that ID timed with A's kernels.
`

func compareMain(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, compareUsage) }
	if help, err := parseArgs(fs, args, 2); help || err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return usagef("compare: want two files (autotune --json outputs), got %d", fs.NArg())
	}
	a, err := readDecisions(fs.Arg(0))
	if err != nil {
		return err
	}
	b, err := readDecisions(fs.Arg(1))
	if err != nil {
		return err
	}
	return writeComparison(stdout, a, b)
}

// readDecisions reads an autotune --json output, gzipped if path ends in .gz.
func readDecisions(path string) ([]tuner.Decision, error) {
	data, err := readUserFile(path, maxUserFile)
	if err != nil {
		return nil, err
	}
	var ds []tuner.Decision
	if err := json.Unmarshal(data, &ds); err != nil {
		return nil, fmt.Errorf("%s: not an autotune --json output: %v", path, err)
	}
	return ds, nil
}

type decisionKey struct {
	arch string
	job  tuner.Job
}

// writeComparison prints one line per job present in both runs. Where the
// winners differ, the verdict is "equivalent" when their medians are
// closer than either's interval; "runs disagree" when each run timed both
// picks and ranks its own ahead with the intervals apart (the two runs'
// spread, not the search, separates them: the same kernel measured
// differently in the two runs); otherwise how much faster or slower B's
// pick is, measured in A where A timed it.
func writeComparison(w io.Writer, a, b []tuner.Decision) error {
	inB := map[decisionKey]tuner.Decision{}
	for _, d := range b {
		inB[decisionKey{d.Arch, d.Job}] = d
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ARCH\tFORMAT\tSHAPE\tA WINNER\tA µs [95% CI]\tB WINNER\tB µs [95% CI]\tB's WINNER IN A\tVERDICT\tB vs A PER CEILING\tPER READ")
	var worst float64
	n := 0
	var tally struct{ same, equivalent, disagree, faster, within2, behind int }
	var changed []string // formats whose kernel sources differ
	seen := map[string]bool{}
	for _, da := range a {
		db, ok := inB[decisionKey{da.Arch, da.Job}]
		if !ok {
			continue
		}
		n++
		bInA, found := candidate(da, db.Winner.ID)
		aInB, foundInB := candidate(db, da.Winner.ID)
		verdict := "same"
		inA := "-"
		if found {
			inA = fmt.Sprintf("%.2f µs", bInA.MedianUS)
		}
		if da.Winner.ID == db.Winner.ID {
			tally.same++
		} else {
			gap := db.Winner.MedianUS/da.Winner.MedianUS - 1
			spread := max(da.Winner.HiUS-da.Winner.LoUS, db.Winner.HiUS-db.Winner.LoUS) / da.Winner.MedianUS
			if found {
				gap = bInA.MedianUS/da.Winner.MedianUS - 1
			}
			worst = max(worst, gap)
			switch {
			case abs(db.Winner.MedianUS-da.Winner.MedianUS) < max(da.Winner.HiUS-da.Winner.LoUS, db.Winner.HiUS-db.Winner.LoUS):
				verdict = fmt.Sprintf("equivalent: %+.1f %% (spread %.1f %%)", 100*gap, 100*spread)
				tally.equivalent++
			case found && foundInB && gap > 0 && bInA.LoUS > da.Winner.HiUS && aInB.LoUS > db.Winner.HiUS:
				verdict = fmt.Sprintf("runs disagree: A has B's pick %+.1f %%, B has A's %+.1f %%", 100*gap, 100*(aInB.MedianUS/db.Winner.MedianUS-1))
				tally.disagree++
			case gap < 0:
				verdict = fmt.Sprintf("%.1f %% faster", -100*gap)
				tally.faster++
			default:
				verdict = fmt.Sprintf("%.1f %% slower", 100*gap)
				if gap > 0.02 {
					tally.behind++
				} else {
					tally.within2++
				}
			}
		}
		if da.SourceHash != db.SourceHash && !seen[da.Format] {
			seen[da.Format] = true
			changed = append(changed, da.Format)
		}
		perCeil := scaledChange(db.Winner.MedianUS*db.CeilingGBs, da.Winner.MedianUS*da.CeilingGBs)
		perRead := "-"
		if da.ReadUS > 0 && db.ReadUS > 0 {
			perRead = scaledChange(db.Winner.MedianUS/db.ReadUS, da.Winner.MedianUS/da.ReadUS)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f [%.2f, %.2f]\t%s\t%.2f [%.2f, %.2f]\t%s\t%s\t%s\t%s\n", da.Arch, da.Format, da.Shape(),
			da.Winner.ID, da.Winner.MedianUS, da.Winner.LoUS, da.Winner.HiUS,
			db.Winner.ID, db.Winner.MedianUS, db.Winner.LoUS, db.Winner.HiUS, inA, verdict, perCeil, perRead)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "%d jobs in both runs; B's winners are at most %.1f %% slower than A's (measured in A where A timed them)\n", n, 100*worst); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "B's winners: %d the same, %d equivalent, %d where the runs disagree, %d faster, %d slower by 2 %% or less, %d slower by more than 2 %%\n",
		tally.same, tally.equivalent, tally.disagree, tally.faster, tally.within2, tally.behind); err != nil {
		return err
	}
	for _, r := range []struct {
		name string
		ds   []tuner.Decision
	}{{"A", a}, {"B", b}} {
		if line := batchesLine(r.name, r.ds); line != "" {
			if _, err := fmt.Fprintln(w, line); err != nil {
				return err
			}
		}
	}
	if len(changed) > 0 {
		_, err := fmt.Fprintf(w, "kernel sources differ between the runs for %s: \"B's winner in A\" is that ID with A's kernels; compare the PER CEILING and PER READ columns\n", strings.Join(changed, ", "))
		return err
	}
	return nil
}

// batchesLine says how many timed batches a run spent against what
// exhaustive search would have spent on the same candidates, from the
// decisions that record both; "" when none does (runs before the fields).
func batchesLine(name string, ds []tuner.Decision) string {
	spent, exhaustive, jobs := 0, 0, 0
	for _, d := range ds {
		if d.ExhaustiveBatches > 0 {
			spent += d.Batches
			exhaustive += d.ExhaustiveBatches
			jobs++
		}
	}
	if jobs == 0 {
		return ""
	}
	return fmt.Sprintf("%s timed %d batches in %d jobs: %.1f %% of the %d exhaustive search would have timed on its candidates",
		name, spent, jobs, 100*float64(spent)/float64(exhaustive), exhaustive)
}

// scaledChange is b/a − 1 in percent ("+3.2 %"), or "-" when either is
// not positive (a yardstick that was not measured).
func scaledChange(b, a float64) string {
	if !(a > 0) || !(b > 0) {
		return "-"
	}
	return fmt.Sprintf("%+.1f %%", 100*(b/a-1))
}

// candidate finds id among a decision's measured candidates.
func candidate(d tuner.Decision, id string) (tuner.Candidate, bool) {
	if d.Winner.ID == id {
		return d.Winner, true
	}
	for _, c := range d.Candidates {
		if c.ID == id && c.MedianUS > 0 {
			return c, true
		}
	}
	return tuner.Candidate{}, false
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
