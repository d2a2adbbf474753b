package tuner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/gemvtune/gemvtune/internal/gpu"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

// ChainStage is one GEMV of a decoded token, in the order the token runs
// them: its name ("blk.3.qkv"), format, shape and the variant that runs it.
type ChainStage struct {
	Name       string
	Format     string
	Rows, Cols int
	Params     space.Params
	Cubin      []byte // the variant's stored cubin; nil: compiled here
	// PDLShared is the dynamic shared memory of the stage's PDL launches
	// (gemvtune.Choice.PDLSharedBytes); 0: the launch's own.
	PDLShared uint32
	// LaunchPDL is the stage's recorded launch mode
	// (gemvtune.Choice.PDLPays).
	LaunchPDL bool
}

// ChainOptions are how Chain runs the token.
type ChainOptions struct {
	// PDL also runs the token with programmatic dependent launch (a second
	// graph over the same buffers, with programmatic edges; sm_90+): its
	// outputs must be bit-identical to the plain graph's, and its timed
	// batches alternate with the plain graph's.
	PDL bool
	// Recorded, with PDL, also runs the token as the stages' choices say:
	// a PDL edge before each stage recorded in PDL launch mode, a plain
	// one before the others. A third graph, checked and timed like the
	// others; left out when every stage has the same mode (it would be
	// one of the first two).
	Recorded bool
	// Reads also times the token's weights read by a streaming read, one
	// kernel per stage over the stage's own bytes, in graphs of the same
	// edges (ChainResult.Reads, chainReadModes): what launching the token
	// one kernel at a time allows a kernel that does nothing but read.
	Reads bool
	// Samples is how many timed batches of tokens give each median; 0 is
	// 21.
	Samples int
}

// ChainTiming is what one token took in one launch mode.
type ChainTiming struct {
	MedianUS   float64 // µs per token
	LoUS, HiUS float64 // confidence interval of the median
	// PctCeiling is the time reading the token's bytes at the ceiling
	// would take, over MedianUS, in percent.
	PctCeiling float64
	TokPerS    float64 // 1e6 / MedianUS: what the GEMVs alone allow
}

// ChainResult is what one token's GEMVs took: launched plainly in the
// graph (the embedded timing) and, with ChainOptions.PDL, with PDL edges.
type ChainResult struct {
	Stages int
	Bytes  int64 // weight bytes one token reads
	// CeilingGBs is the streaming read's GB/s measured in the same run:
	// the mean of CeilingBeforeGBs and CeilingAfterGBs, measured before
	// and after the timed batches, which every PctCeiling divides by.
	CeilingGBs                        float64
	CeilingBeforeGBs, CeilingAfterGBs float64
	ChainTiming                                         // launched plainly in the graph
	PDL                               *ChainTiming      // with PDL edges, under ChainOptions.PDL
	Recorded                          *ChainTiming      // as the stages' modes say, under ChainOptions.Recorded
	Reads                             []ChainModeTiming // under ChainOptions.Reads
	// MaxRelErr is the largest relative L2 error of a stage's output
	// against its float64 reference (the stage's own input x).
	MaxRelErr float64
	GPUName   string
}

// ChainModeTiming is a timing of the token in a named mode (Chain's read
// modes are chainReadModes').
type ChainModeTiming struct {
	Mode string
	ChainTiming
}

// chainReadModes are the read graphs Chain times under ChainOptions.Reads,
// in order; the PDL ones from sm_90 on. Each stage is one launch of
// chain_read (ceilingSource) over the stage's weights: one block of 1024
// threads per SM, pinned there under PDL edges as the GEMVs' blocks are,
// each thread with up to 8 loads in flight. A pass of the grid covers
// SMs·1024·128 bytes (17.3 MB on the H200): every stage of llama-3-8b
// but gate_up and the lm head in one pass.
var chainReadModes = []struct {
	name string
	pdl  bool // PDL edges before every stage but the first
	wait bool // griddepcontrol.wait before the loads, as every GEMV waits before its loads
	x    bool // after the wait every block reads chainReadX bytes of x (an L2 hit), as a GEMV stages x
	// early issues the first pass's loads before the wait: what a GEMV
	// whose first weights travelled during the kernel before's tail could
	// reach.
	early bool
}{
	{name: "reads", wait: true},
	{name: "reads, PDL", pdl: true, wait: true},
	{name: "reads, PDL, no wait", pdl: true},
	{name: "reads, PDL, x", pdl: true, wait: true, x: true},
	{name: "reads, PDL, x, early", pdl: true, wait: true, x: true, early: true},
}

// ChainReadModes returns the names of the read modes Chain times under
// ChainOptions.Reads, in order (ChainModeTiming.Mode); the PDL ones only
// from sm_90 on.
func ChainReadModes() []string {
	names := make([]string, len(chainReadModes))
	for i, m := range chainReadModes {
		names[i] = m.name
	}
	return names
}

// chainReadX is the x that the read graphs' "x" modes read after the wait
// in every block: 16 KiB, a 4096-long float x.
const chainReadX = 16 << 10

// chainTokens is how many tokens one timed batch replays.
const chainTokens = 5

// Chain runs the stages as one token on GPU ordinal, each stage's x the
// first Cols values of the stage before's y (the first stage's a random
// x), every stage with weights of its own in device memory (a token reads
// far more than L2 holds, as a model does), captured in one CUDA graph
// (with ChainOptions.PDL a second one with PDL edges over the same
// buffers). It checks every stage's output against the float64 reference
// of the input it read (and the PDL graph's against those bits), then
// times the graphs: warm-up, then Samples batches of chainTokens tokens
// between CUDA events, the graphs alternating. Stages of one (format,
// shape, layout) share their host weights (random, quantized once) and are
// copied to their own device memory.
func Chain(ctx context.Context, ordinal int, stages []ChainStage, opts ChainOptions) (ChainResult, error) {
	res := ChainResult{Stages: len(stages)}
	if err := CheckChain(stages); err != nil {
		return res, err
	}
	if opts.Samples <= 0 {
		opts.Samples = 21
	}
	dev, err := gpu.Open(ordinal)
	if err != nil {
		return res, err
	}
	defer dev.Close()
	info := dev.Info()
	res.GPUName = info.Name
	opts.Recorded = opts.Recorded && opts.PDL && mixedModes(stages)
	if opts.PDL && info.Arch.Major < 9 {
		return res, fmt.Errorf("chain with PDL: %s is %s; programmatic dependent launch needs sm_90 or newer", info.Name, info.Arch)
	}
	libs, err := gpu.FindNVRTC()
	if err != nil {
		return res, err
	}
	nv, err := gpu.ChooseNVRTC(libs, info.Arch)
	if err != nil {
		return res, err
	}
	ceil, _, err := nv.Compile(ceilingSource, "read_ceiling.cu", info.Arch)
	if err != nil {
		return res, fmt.Errorf("compiling the read-ceiling kernel: %w", err)
	}
	w := &worker{dev: dev, info: info}
	if res.CeilingBeforeGBs, err = w.measureCeiling(ceil); err != nil {
		return res, fmt.Errorf("measuring the read ceiling: %w", err)
	}

	// Host data: one quantized matrix per (format, shape, layout).
	type weightKey struct {
		format     string
		rows, cols int
		layout     int
	}
	raws := map[weightKey][]byte{}   // raw bytes, for the reference
	packed := map[weightKey][]byte{} // in the stage's layout
	for _, st := range stages {
		k := weightKey{st.Format, st.Rows, st.Cols, st.Params.L}
		if _, ok := packed[k]; ok {
			continue
		}
		fam, _ := variants.FamilyOf(st.Format)
		rk := weightKey{st.Format, st.Rows, st.Cols, 0}
		raw, ok := raws[rk]
		if !ok {
			if raw, err = chainWeights(fam.Format(), st.Rows, st.Cols); err != nil {
				return res, fmt.Errorf("%s: %w", st.Name, err)
			}
			raws[rk] = raw
		}
		if packed[k], err = fam.Repack(raw, st.Rows, st.Cols, st.Params.L); err != nil {
			return res, fmt.Errorf("%s: %w", st.Name, err)
		}
	}
	x0 := make([]float32, stages[0].Cols)
	rng := rand.New(rand.NewPCG(7, 11))
	for i := range x0 {
		x0[i] = float32(rng.Float64()*2 - 1)
	}

	// Device data and modules (one per variant, however many stages run
	// it), then the graph.
	type variantKey struct {
		format string
		params space.Params
	}
	devs := make([]chainDev, len(stages))
	mods := map[variantKey]gpu.Module{}
	fns := map[variantKey]gpu.Function{}
	shared := map[variantKey]int{} // the dynamic shared memory limit set per function
	var x gpu.DevPtr
	var graphs []gpu.GraphExec     // plain, then with PDL edges when asked
	var readGraphs []gpu.GraphExec // chainReadModes', under opts.Reads
	var readNames []string         // their modes' names
	var readOut, readX gpu.DevPtr
	defer dev.Do(func(c *gpu.Ctx) error {
		for _, g := range slices.Concat(graphs, readGraphs) {
			c.DestroyGraphExec(g)
		}
		if w.ceilingMod != 0 {
			c.UnloadModule(w.ceilingMod)
		}
		if readOut != 0 {
			c.Free(readOut)
		}
		if readX != 0 {
			c.Free(readX)
		}
		for _, d := range devs {
			if d.w != 0 {
				c.Free(d.w)
			}
			if d.y != 0 {
				c.Free(d.y)
			}
		}
		for _, m := range mods {
			c.UnloadModule(m)
		}
		if x != 0 {
			c.Free(x)
		}
		return nil
	})
	for i, st := range stages {
		fam, _ := variants.FamilyOf(st.Format)
		vk := variantKey{st.Format, st.Params}
		d := &devs[i]
		d.launch = fam.Launch(st.Params, st.Rows, st.Cols)
		b := packed[weightKey{st.Format, st.Rows, st.Cols, st.Params.L}]
		d.bytes = len(b)
		res.Bytes += int64(len(b))
		cubin := st.Cubin
		if _, loaded := fns[vk]; !loaded && cubin == nil {
			src, err := fam.Source(st.Params)
			if err != nil {
				return res, fmt.Errorf("%s: %w", st.Name, err)
			}
			if cubin, _, err = nv.Compile(src, st.Format+".cu", info.Arch); err != nil {
				return res, fmt.Errorf("%s: compiling %s: %w", st.Name, st.Params.ID(), err)
			}
		}
		err := dev.Do(func(c *gpu.Ctx) error {
			fn, loaded := fns[vk]
			if !loaded {
				m, err := c.LoadModule(cubin)
				if err != nil {
					return err
				}
				mods[vk] = m
				if fn, err = c.Function(m, variants.KernelName); err != nil {
					return err
				}
				fns[vk] = fn
			}
			d.fn = fn
			// The function's limit is the largest any of its stages needs.
			if need := int(max(d.launch.SharedBytes, st.PDLShared)); need > 48*1024 && need > shared[vk] {
				if err := c.SetMaxDynamicShared(fn, need); err != nil {
					return err
				}
				shared[vk] = need
			}
			var err error
			if d.w, err = c.Alloc(len(b)); err != nil {
				return err
			}
			if err := c.CopyHtoD(d.w, b); err != nil {
				return err
			}
			d.y, err = c.Alloc(4 * st.Rows) // poisoned by runChain
			return err
		})
		if err != nil {
			return res, fmt.Errorf("%s: %w", st.Name, err)
		}
	}
	err = dev.Do(func(c *gpu.Ctx) error {
		var err error
		if x, err = c.Alloc(4 * len(x0)); err != nil {
			return err
		}
		if err := c.CopyHtoD(x, gpu.Bytes(x0)); err != nil {
			return err
		}
		in := x
		for i, st := range stages {
			d := &devs[i]
			if d.args, err = gpu.NewArgs(d.w, in, d.y, int32(st.Rows), int32(st.Cols)); err != nil {
				return err
			}
			in = d.y
		}
		s, err := c.NewStream()
		if err != nil {
			return err
		}
		defer c.DestroyStream(s)
		modes := []chainMode{{}}
		if opts.PDL {
			modes = append(modes, chainMode{pdl: true})
		}
		if opts.Recorded {
			modes = append(modes, chainMode{recorded: true})
		}
		for _, m := range modes {
			g, err := captureChain(c, s, stages, devs, m)
			if err != nil {
				return err
			}
			graphs = append(graphs, g)
		}
		if !opts.Reads {
			return nil
		}
		fn, err := c.Function(w.ceilingMod, "chain_read")
		if err != nil {
			return err
		}
		if readOut, err = c.Alloc(4); err != nil {
			return err
		}
		if readX, err = c.Alloc(chainReadX); err != nil {
			return err
		}
		if err := c.Memset(readX, 0x3C, chainReadX); err != nil {
			return err
		}
		// One block of 1024 threads per SM; with PDL edges its shared
		// memory keeps it so (pinnedShared), as a pinned GEMV's does.
		readLaunch := variants.Launch{Grid: [3]uint32{uint32(info.SMs), 1, 1}, Block: [3]uint32{1024, 1, 1}}
		limit := 0
		pinned, err := pinnedShared(c, fn, readLaunch, info, &limit)
		if err != nil {
			return err
		}
		for _, m := range chainReadModes {
			if m.pdl && !opts.PDL {
				continue
			}
			cfg := gpu.LaunchConfig{Grid: readLaunch.Grid, Block: readLaunch.Block}
			if m.pdl {
				cfg.SharedBytes = pinned
			}
			var xArg gpu.DevPtr // nil: no x
			if m.x {
				xArg = readX
			}
			g, err := captureReads(c, s, fn, cfg, devs, readOut, xArg, m.pdl, m.wait, m.early)
			if err != nil {
				return err
			}
			readGraphs = append(readGraphs, g)
			readNames = append(readNames, m.name)
		}
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("capturing the token's graph: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}

	// One token, checked stage by stage against its own input; with PDL
	// edges the same token must give the same bits.
	var ys [][]float32
	var modeYs [][][]float32 // per graph after the first
	err = dev.Do(func(c *gpu.Ctx) error {
		var err error
		if ys, err = runChain(c, graphs[0], stages, devs); err != nil {
			return err
		}
		for _, g := range graphs[1:] {
			y, err := runChain(c, g, stages, devs)
			if err != nil {
				return err
			}
			modeYs = append(modeYs, y)
		}
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("running the token: %w", err)
	}
	in := x0
	for i, st := range stages {
		fam, _ := variants.FamilyOf(st.Format)
		ref, err := fam.Format().Reference(raws[weightKey{st.Format, st.Rows, st.Cols, 0}], in, st.Rows, st.Cols)
		if err != nil {
			return res, err
		}
		e, finite := relL2(ys[i], ref)
		if !finite || !(e <= fam.ErrorBound(st.Params)) {
			return res, fmt.Errorf("%s (%s %dx%d, %s): relative L2 error %.3g against the float64 reference, bound %.3g",
				st.Name, st.Format, st.Rows, st.Cols, st.Params.ID(), e, fam.ErrorBound(st.Params))
		}
		res.MaxRelErr = max(res.MaxRelErr, e)
		if i+1 < len(stages) {
			in = ys[i][:stages[i+1].Cols]
		}
	}
	for _, pdlYs := range modeYs {
		for i, st := range stages {
			for r := range ys[i] {
				if math.Float32bits(pdlYs[i][r]) != math.Float32bits(ys[i][r]) {
					return res, fmt.Errorf("%s (%s %dx%d, %s) with PDL edges: y[%d] = %08x, %08x without: a kernel read memory before griddepcontrol.wait",
						st.Name, st.Format, st.Rows, st.Cols, st.Params.ID(), r, math.Float32bits(pdlYs[i][r]), math.Float32bits(ys[i][r]))
				}
			}
		}
	}

	// Time it: batches of chainTokens tokens between CUDA events, the
	// graphs alternating batch by batch, so a drift of the clocks shifts
	// both modes alike.
	timed := slices.Concat(graphs, readGraphs)
	samples := make([][]float64, len(timed))
	err = dev.Do(func(c *gpu.Ctx) error {
		e0, err := c.NewEvent()
		if err != nil {
			return err
		}
		defer c.DestroyEvent(e0)
		e1, err := c.NewEvent()
		if err != nil {
			return err
		}
		defer c.DestroyEvent(e1)
		for k := -3; k < opts.Samples; k++ { // three batches of warm-up
			for gi, g := range timed {
				if err := c.Record(e0, 0); err != nil {
					return err
				}
				for t := 0; t < chainTokens; t++ {
					if err := c.LaunchGraph(g, 0); err != nil {
						return err
					}
				}
				if err := c.Record(e1, 0); err != nil {
					return err
				}
				if err := c.WaitEvent(e1, 60*time.Second); err != nil {
					return err
				}
				d, err := c.Elapsed(e0, e1)
				if err != nil {
					return err
				}
				if k >= 0 {
					samples[gi] = append(samples[gi], d.Seconds()*1e6/chainTokens)
				}
			}
		}
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("timing the token: %w", err)
	}
	// The ceiling again, after the timing: the same machine's read drifts
	// by a few percent within a run, and the token's share of it is the
	// figure this run reports.
	if res.CeilingAfterGBs, err = w.measureCeiling(ceil); err != nil {
		return res, fmt.Errorf("measuring the read ceiling after the timing: %w", err)
	}
	res.CeilingGBs = (res.CeilingBeforeGBs + res.CeilingAfterGBs) / 2
	timings := make([]ChainTiming, len(samples))
	for i, smp := range samples {
		timings[i] = chainTiming(smp, res.Bytes, res.CeilingGBs)
	}
	res.ChainTiming = timings[0]
	if len(graphs) > 1 {
		res.PDL = &timings[1]
	}
	if len(graphs) > 2 {
		res.Recorded = &timings[2]
	}
	for i, name := range readNames {
		res.Reads = append(res.Reads, ChainModeTiming{Mode: name, ChainTiming: timings[len(graphs)+i]})
	}
	return res, nil
}

// chainTiming summarises a mode's µs per token.
func chainTiming(samples []float64, bytes int64, ceilingGBs float64) ChainTiming {
	var t ChainTiming
	t.MedianUS, t.LoUS, t.HiUS = summarize(samples)
	if t.MedianUS > 0 {
		t.TokPerS = 1e6 / t.MedianUS
		t.PctCeiling = 100 * (float64(bytes) / (ceilingGBs * 1e3)) / t.MedianUS
	}
	return t
}

// chainDev is one stage on the device: its weights and output, the
// kernel, its launch and its arguments (weights, the stage before's y or
// the token's x, y, rows, cols).
type chainDev struct {
	w, y   gpu.DevPtr
	bytes  int // of w
	fn     gpu.Function
	launch variants.Launch
	args   *gpu.Args
}

// chainMode is how a graph launches the token's stages: with PDL edges
// before every stage but the first, or before those recorded in PDL
// launch mode, or plainly.
type chainMode struct{ pdl, recorded bool }

// mixedModes reports whether the stages' recorded launch modes differ.
func mixedModes(stages []ChainStage) bool {
	for _, st := range stages[1:] {
		if st.LaunchPDL != stages[1].LaunchPDL {
			return true
		}
	}
	return false
}

// captureChain captures the stages' launches on s into a graph and
// instantiates it. With m.pdl every stage but the first, with m.recorded
// those recorded in PDL launch mode, is launched with programmatic
// dependent launch (a programmatic edge in the graph) and its PDL shared
// memory.
func captureChain(c *gpu.Ctx, s gpu.Stream, stages []ChainStage, devs []chainDev, m chainMode) (gpu.GraphExec, error) {
	return captureGraph(c, s, len(devs), func(i int) error {
		d := devs[i]
		pdl := i > 0 && (m.pdl || m.recorded && stages[i].LaunchPDL)
		cfg := gpu.LaunchConfig{Grid: d.launch.Grid, Block: d.launch.Block, SharedBytes: d.launch.SharedBytes, Stream: s, PDL: pdl}
		if pdl {
			cfg.SharedBytes = max(cfg.SharedBytes, stages[i].PDLShared)
		}
		if err := c.Launch(d.fn, cfg, d.args); err != nil {
			return fmt.Errorf("%s: %w", stages[i].Name, err)
		}
		return nil
	})
}

// captureReads captures, on s, one launch of the chain's streaming read
// fn with cfg per stage over the stage's weights (rounded down to 16
// bytes), with PDL edges before all but the first where pdl, each read
// waiting at griddepcontrol.wait first where wait, reading x (chainReadX
// bytes) after it where x is set, its first loads issued before it where
// early, and instantiates the graph.
func captureReads(c *gpu.Ctx, s gpu.Stream, fn gpu.Function, cfg gpu.LaunchConfig, devs []chainDev, out, x gpu.DevPtr, pdl, wait, early bool) (gpu.GraphExec, error) {
	flag := func(b bool) int32 {
		if b {
			return 1
		}
		return 0
	}
	return captureGraph(c, s, len(devs), func(i int) error {
		args, err := gpu.NewArgs(devs[i].w, uint32(devs[i].bytes/16), out, flag(wait), flag(early), x, uint32(chainReadX/16))
		if err != nil {
			return err
		}
		cfg.Stream, cfg.PDL = s, pdl && i > 0
		return c.Launch(fn, cfg, args)
	})
}

// captureGraph captures launch(0) … launch(n-1) on s into a graph and
// instantiates it; a launch's error ends the capture.
func captureGraph(c *gpu.Ctx, s gpu.Stream, n int, launch func(i int) error) (gpu.GraphExec, error) {
	if err := c.BeginCapture(s); err != nil {
		return 0, err
	}
	for i := range n {
		if err := launch(i); err != nil {
			_, _ = c.EndCapture(s)
			return 0, err
		}
	}
	g, err := c.EndCapture(s)
	if err != nil {
		return 0, err
	}
	defer c.DestroyGraph(g)
	return c.Instantiate(g)
}

// runChain poisons every stage's y with NaN, runs graph once and returns
// the outputs.
func runChain(c *gpu.Ctx, graph gpu.GraphExec, stages []ChainStage, devs []chainDev) ([][]float32, error) {
	for i, st := range stages {
		if err := c.Memset(devs[i].y, 0xFF, 4*st.Rows); err != nil {
			return nil, err
		}
	}
	if err := c.LaunchGraph(graph, 0); err != nil {
		return nil, err
	}
	if err := c.WaitStream(0, 60*time.Second); err != nil {
		return nil, err
	}
	ys := make([][]float32, len(stages))
	for i, st := range stages {
		ys[i] = make([]float32, st.Rows)
		if err := c.CopyDtoH(gpu.Bytes(ys[i]), devs[i].y); err != nil {
			return nil, err
		}
	}
	return ys, nil
}

// CheckChain checks that the stages form a chain: known formats, shapes
// their variants can run, and each x no longer than the y before it.
func CheckChain(stages []ChainStage) error {
	if len(stages) == 0 {
		return errors.New("chain: no stages")
	}
	for i, st := range stages {
		fam, err := variants.FamilyOf(st.Format)
		if err != nil {
			return fmt.Errorf("chain stage %s: %w", st.Name, err)
		}
		if err := fam.Gate(st.Params, st.Rows, st.Cols); err != nil {
			return fmt.Errorf("chain stage %s: %s cannot run %dx%d: %w", st.Name, st.Params.ID(), st.Rows, st.Cols, err)
		}
		if i > 0 && st.Cols > stages[i-1].Rows {
			return fmt.Errorf("chain stage %s reads %d values of x, but %s writes only %d", st.Name, st.Cols, stages[i-1].Name, stages[i-1].Rows)
		}
	}
	return nil
}

// chainWeightCache keeps chainWeights' results for the process: every
// mode of a format's chain (stock, tuned, with and without PDL) runs on
// the same weights.
var chainWeightCache sync.Map // chainWeightKey → []byte

type chainWeightKey struct {
	format     string
	rows, cols int
}

// chainWeights are random weights quantized into format, scaled so that a
// stage's output is about as large as its input (σ = 1/√cols), which keeps
// a chain of a hundred GEMVs finite and away from zero. The same format and
// shape give the same bytes.
func chainWeights(f variants.Format, rows, cols int) ([]byte, error) {
	k := chainWeightKey{f.Name(), rows, cols}
	if b, ok := chainWeightCache.Load(k); ok {
		return b.([]byte), nil
	}
	b, err := makeChainWeights(f, rows, cols)
	if err == nil {
		chainWeightCache.Store(k, b)
	}
	return b, err
}

func makeChainWeights(f variants.Format, rows, cols int) ([]byte, error) {
	rng := rand.New(rand.NewPCG(uint64(rows), uint64(cols)))
	w := make([]float32, rows*cols)
	sigma := 1 / math.Sqrt(float64(cols))
	for i := range w {
		w[i] = float32(rng.NormFloat64() * sigma)
	}
	return f.Quantize(w, rows, cols)
}
