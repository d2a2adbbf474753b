package tuner

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gemvtune/gemvtune/internal/gpu"
)

// graph returns the captured batch of launches of candidate id, rotating
// over the weight copies, so a timed sample measures kernels and not the
// CPU's launch rate.
func (w *worker) graph(c *gpu.Ctx, id string) (gpu.GraphExec, error) {
	s := w.shape
	if g, ok := s.graphs[id]; ok {
		return g, nil
	}
	fn, cfg, args, err := w.launches(c, id)
	if err != nil {
		return 0, err
	}
	if err := c.BeginCapture(s.stream); err != nil {
		return 0, err
	}
	for i := 0; i < s.batch; i++ {
		if err := c.Launch(fn, cfg, args[i%len(args)]); err != nil {
			_, _ = c.EndCapture(s.stream)
			return 0, err
		}
	}
	g, err := c.EndCapture(s.stream)
	if err != nil {
		return 0, err
	}
	exec, err := c.Instantiate(g)
	_ = c.DestroyGraph(g)
	if err != nil {
		return 0, err
	}
	s.graphs[id] = exec
	return exec, nil
}

// launches returns the kernel, launch and per-copy arguments of candidate
// id (or of the same-bytes read with one launch, readLaunchID(k), or of a
// candidate launched with programmatic dependent launch, pdlPrefix+id)
// for the current job.
func (w *worker) launches(c *gpu.Ctx, id string) (gpu.Function, gpu.LaunchConfig, []*gpu.Args, error) {
	if k, ok := readLaunchIndex(id); ok {
		return w.readLaunches(c, k)
	}
	if v, ok := strings.CutPrefix(id, pdlPrefix); ok {
		fn, cfg, args, err := w.launches(c, v)
		if err != nil {
			return fn, cfg, args, err
		}
		m, err := w.module(v)
		if err != nil {
			return fn, cfg, args, err
		}
		cfg.PDL = true
		cfg.SharedBytes = max(cfg.SharedBytes, uint32(m.attrs.PDLShared))
		return fn, cfg, args, nil
	}
	s := w.shape
	m, err := w.module(id)
	if err != nil {
		return 0, gpu.LaunchConfig{}, nil, err
	}
	ptrs, err := w.weights(c, m.params.L)
	if err != nil {
		return 0, gpu.LaunchConfig{}, nil, err
	}
	l := s.fam.Launch(m.params, s.rows, s.cols)
	cfg := gpu.LaunchConfig{Grid: l.Grid, Block: l.Block, SharedBytes: l.SharedBytes, Stream: s.stream}
	args := make([]*gpu.Args, len(ptrs))
	for i, p := range ptrs {
		if args[i], err = gpu.NewArgs(p, s.x, s.y, int32(s.rows), int32(s.cols)); err != nil {
			return 0, gpu.LaunchConfig{}, nil, err
		}
	}
	return m.fn, cfg, args, nil
}

// measure times ids interleaved: each round replays every candidate's batch
// once, in order (A B C A B C …), so drift hits all alike. Warm-up rounds
// (at least one, and at least minWarmup of GPU time) are not kept. A sample
// is µs per launch.
func (w *worker) measure(ids []string, rounds int) response {
	s := w.shape
	if s == nil {
		return response{Err: "measure: no shape set"}
	}
	samples := make(map[string][]float64, len(ids))
	err := w.dev.Do(func(c *gpu.Ctx) error {
		execs := make([]gpu.GraphExec, len(ids))
		for i, id := range ids {
			g, err := w.graph(c, id)
			if err != nil {
				return fmt.Errorf("%s: %w", id, err)
			}
			execs[i] = g
		}
		events := make([]gpu.Event, len(ids)+1)
		for i := range events {
			e, err := c.NewEvent()
			if err != nil {
				return err
			}
			events[i] = e
			defer c.DestroyEvent(e)
		}
		// round replays every candidate's batch once, in order, and returns
		// the GPU time of the whole round.
		round := func() (time.Duration, error) {
			if err := c.Record(events[0], s.stream); err != nil {
				return 0, err
			}
			for i, g := range execs {
				if err := c.LaunchGraph(g, s.stream); err != nil {
					return 0, fmt.Errorf("%s: %w", ids[i], err)
				}
				if err := c.Record(events[i+1], s.stream); err != nil {
					return 0, err
				}
			}
			if err := c.WaitEvent(events[len(ids)], roundTimeout); err != nil {
				return 0, err
			}
			return c.Elapsed(events[0], events[len(ids)])
		}
		// Warm-up rounds, not kept, until the GPU has been busy for
		// minWarmup. A budgeted stage keeps one round per candidate, and in
		// the H200 budgeted run such single samples came out up to 10 %
		// slow (docs/results.md); a GPU that idled between calls starting
		// at lower clocks is the suspected cause, so every call now warms
		// the GPU for a fixed time, not just one round.
		for warm, n := time.Duration(0), 0; n == 0 || (warm < minWarmup && n < maxWarmupRounds); n++ {
			d, err := round()
			if err != nil {
				return err
			}
			warm += d
		}
		for r := 0; r < rounds; r++ {
			if _, err := round(); err != nil {
				return err
			}
			for i, id := range ids {
				d, err := c.Elapsed(events[i], events[i+1])
				if err != nil {
					return err
				}
				samples[id] = append(samples[id], float64(d.Nanoseconds())/1e3/float64(s.batch))
			}
		}
		return nil
	})
	if errors.Is(err, gpu.ErrTimeout) {
		return response{Err: err.Error(), Status: "timeout", Fatal: true}
	}
	if err != nil {
		return fail("fault", err)
	}
	return response{OK: true, Samples: samples, Batch: s.batch}
}
