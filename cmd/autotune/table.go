package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gemvtune/gemvtune/tuner"
)

// writeDecisions prints the final table: one row per (arch, format, shape).
func writeDecisions(w io.Writer, ds []tuner.Decision) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ARCH\tFORMAT\tSHAPE\tWINNER\tCLASS\tµs\tGB/s\t% CEIL\tSPEEDUP\tDECISION")
	throttled := false
	for _, d := range ds {
		mark := ""
		if d.Throttled {
			mark, throttled = " *", true
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s%s\n",
			d.Arch, d.Format, d.Shape(), d.Winner.ID, orDash(d.Winner.Class),
			num(d.Winner.MedianUS, 2), num(d.Winner.GBs, 0), num(d.Winner.PctCeiling, 1),
			speedup(d.Speedup), oneLine(d.Reason), mark)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if throttled {
		_, err := fmt.Fprintln(w, "* the GPU throttled during this measurement (clock-event reasons are in the cache; see autotune show)")
		return err
	}
	return nil
}

// writeDecisionsJSON prints the decisions as an indented JSON array.
func writeDecisionsJSON(w io.Writer, ds []tuner.Decision) error {
	if ds == nil {
		ds = []tuner.Decision{}
	}
	b, err := json.MarshalIndent(ds, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding decisions: %w", err)
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// writePlan prints what --dry-run shows: per (format, shape) the candidates
// left after static pruning, the main exclusion reasons and the expected
// time, then a total.
func writePlan(w io.Writer, arch string, budget budgetSpec, plan []tuner.PlanEntry) error {
	fmt.Fprintf(w, "plan for %s (budget: %s); nothing is run\n", arch, budget)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FORMAT\tSHAPE\tCANDIDATES\tEXCLUDED\tEXPECTED\tMAIN EXCLUSIONS")
	var cands, excl int
	var total time.Duration
	for _, e := range plan {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\n", e.Format, e.Shape(), e.Candidates, e.Excluded,
			roundDuration(e.Expected), mainReasons(e.Reasons, 3))
		cands += e.Candidates
		excl += e.Excluded
		total += e.Expected
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "total: %d jobs, %d candidates (%d excluded), expected %s on one GPU\n",
		len(plan), cands, excl, roundDuration(total))
	return err
}

// mainReasons returns the n most frequent exclusion reasons as
// "reason (count); ...", most frequent first.
func mainReasons(reasons map[string]int, n int) string {
	type rc struct {
		r string
		c int
	}
	var all []rc
	for r, c := range reasons {
		all = append(all, rc{r, c})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].c != all[j].c {
			return all[i].c > all[j].c
		}
		return all[i].r < all[j].r
	})
	var parts []string
	for i, x := range all {
		if i == n {
			parts = append(parts, fmt.Sprintf("+%d more", len(all)-n))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%d)", oneLine(x.r), x.c))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}

// roundDuration rounds d for display: whole seconds above 10 s, tenths below.
func roundDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}

// num formats v with the given decimals, "-" for zero (not measured).
func num(v float64, decimals int) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("%.*f", decimals, v)
}

// speedup formats a speedup over stock, e.g. "1.18x".
func speedup(v float64) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", v)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine folds whitespace (and newlines) so a reason fits one table cell.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
