package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/gemvtune/gemvtune/tuner"
)

// progress shows how far a run has come on stderr: a bar with an ETA on a
// terminal, otherwise quiet lines (one per job started, one per stage before
// the first job, such as compiling). It is safe for concurrent use: the
// tuner reports from one goroutine per GPU.
//
// The tuner reports three kinds of events: stages before any job (no Job,
// Total = number of jobs), stages within a job (Job set, Total < 0: counts
// unchanged), and a finished job (Stage "done", Done and ETA set).
type progress struct {
	mu      sync.Mutex
	w       io.Writer
	bar     *progressbar.ProgressBar // nil when w is not a terminal
	done    int
	total   int
	eta     time.Duration
	started map[tuner.Job]bool // jobs a line was printed for
	stages  map[string]bool    // pre-job stages printed
}

// newProgress returns a progress display for total jobs on w.
func newProgress(w io.Writer, total int) *progress {
	p := &progress{w: w, total: total, started: map[tuner.Job]bool{}, stages: map[string]bool{}}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription("starting"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(25),
			progressbar.OptionSetPredictTime(false), // the tuner's ETA knows the plan
			progressbar.OptionSetElapsedTime(true),
		)
	}
	return p
}

// update is the tuner's Progress callback.
func (p *progress) update(pr tuner.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pr.Total > 0 {
		p.total = pr.Total
		p.done = max(p.done, pr.Done)
	}
	if pr.ETA > 0 {
		p.eta = pr.ETA
	}
	etaText := ""
	if p.eta > 0 && p.done < p.total {
		etaText = ", ETA " + roundDuration(p.eta)
	}
	where := ""
	if pr.Job != (tuner.Job{}) {
		where = " " + pr.Job.Format + " " + pr.Job.Shape()
		if pr.GPU != "" {
			where += " on GPU " + pr.GPU
		}
	}

	if p.bar != nil {
		if p.total > 0 && p.total != p.bar.GetMax() {
			p.bar.ChangeMax(p.total)
		}
		// The count first, then the text: each renders (no throttle: the
		// tuner sends a few events per job), so the line drawn last holds
		// both the job just reported and the count that includes it.
		_ = p.bar.Set(p.done)
		p.bar.Describe(pr.Stage + where + etaText)
		return
	}
	switch {
	case pr.Job == (tuner.Job{}):
		if pr.Stage != "" && !p.stages[pr.Stage] {
			p.stages[pr.Stage] = true
			fmt.Fprintf(p.w, "autotune: %s\n", pr.Stage)
		}
	case !p.started[pr.Job]:
		p.started[pr.Job] = true
		if pr.Stage != "done" { // a job that reports only its end gets no line
			fmt.Fprintf(p.w, "autotune: [%d/%d]%s%s\n", len(p.started), p.total, where, etaText)
		}
	}
}

// finish removes the bar (the table follows on stdout).
func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Clear()
		_ = p.bar.Exit()
	}
}
