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
// terminal, otherwise one quiet line per job started. It is safe for
// concurrent use (the tuner may report from one goroutine per GPU).
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	bar   *progressbar.ProgressBar // nil when w is not a terminal
	start time.Time
	last  string // the last job line printed (non-terminal)
}

// newProgress returns a progress display for total jobs on w.
func newProgress(w io.Writer, total int) *progress {
	p := &progress{w: w, start: time.Now()}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription("starting"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionSetPredictTime(false), // the tuner's ETA is better informed
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
		)
	}
	return p
}

// update is the tuner's Progress callback.
func (p *progress) update(pr tuner.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	eta := pr.ETA
	if eta <= 0 && pr.Done > 0 && pr.Total > pr.Done {
		el := time.Since(p.start)
		eta = el / time.Duration(pr.Done) * time.Duration(pr.Total-pr.Done)
	}
	etaText := ""
	if eta > 0 {
		etaText = ", ETA " + roundDuration(eta)
	}
	gpu := ""
	if pr.GPU != "" {
		gpu = " on " + pr.GPU
	}
	if p.bar != nil {
		if pr.Total > 0 && pr.Total != p.bar.GetMax() {
			p.bar.ChangeMax(pr.Total)
		}
		p.bar.Describe(fmt.Sprintf("%s %s %s%s%s", pr.Job.Format, pr.Job.Shape(), pr.Stage, gpu, etaText))
		_ = p.bar.Set(pr.Done)
		return
	}
	line := fmt.Sprintf("autotune: [%d/%d] %s %s%s", pr.Done+1, pr.Total, pr.Job.Format, pr.Job.Shape(), gpu)
	if pr.Done >= pr.Total || line == p.last {
		return
	}
	p.last = line
	fmt.Fprintf(p.w, "%s%s\n", line, etaText)
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
