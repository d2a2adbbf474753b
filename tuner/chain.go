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
	// XBack says whose y the stage reads as its x: the stage that many
	// places before it (0 counts as 1, the stage before), or the token's
	// input x where that is before the first stage. A token run as a GGUF
	// file lays it out reads one x in q, k and v (XBack 1, 2 and 3).
	XBack int
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
	// Attribute, with PDL, also times the token with PDL edges once per
	// (format, shape) of its stages, every stage of that shape run by the
	// streaming read of its weights, which waits at griddepcontrol.wait
	// and then reads the stage's own x and writes stand-in values to its
	// y (nonzero, as a GEMV's are), so that the stage after it finds its
	// x in L2 as after a GEMV (ChainResult.Attribution): the token with
	// PDL edges less such a token is what that shape's GEMVs cost beyond
	// a read of their bytes. Those graphs' outputs are not checked (a
	// read's y is not a product).
	Attribute bool
	// Trials are other choices for some of the token's stages, each timed
	// as a whole token beside the others (ChainResult.Trials): with PDL
	// edges before every stage but the first under PDL, else plainly.
	// RefineChain uses them.
	Trials []ChainTrial
	// Samples is how many timed batches of tokens give each median; 0 is
	// 21.
	Samples int
	// BatchTokens is how many tokens one timed batch replays back to
	// back; 0 is 5. Batches of a hundred or more hold the GPU at full
	// power as an engine decoding without pause does, long enough for a
	// power cap to engage (ChainTiming.ThrottledPct).
	BatchTokens int
}

// ChainTrial is the token with other variants for every stage of some
// (format, shape)s: what RefineChain tries in place of the choices.
type ChainTrial struct {
	Variants []ChainVariant
}

// ChainVariant is a variant that runs every stage of one format and
// shape in a ChainTrial.
type ChainVariant struct {
	Format     string
	Rows, Cols int
	Params     space.Params
	Cubin      []byte // the variant's stored cubin; nil: compiled here
	// PDLShared is the dynamic shared memory of its PDL launches; 0:
	// found here (pinnedShared). ChainResult.TrialVariants fill both.
	PDLShared uint32
}

// Job is the stage's format and shape.
func (st ChainStage) Job() Job { return Job{Format: st.Format, Rows: st.Rows, Cols: st.Cols} }

// Job is the format and shape the variant runs.
func (v ChainVariant) Job() Job { return Job{Format: v.Format, Rows: v.Rows, Cols: v.Cols} }

// ChainTiming is what one token took in one launch mode.
type ChainTiming struct {
	MedianUS   float64 // µs per token
	LoUS, HiUS float64 // confidence interval of the median
	// PctCeiling is the time reading the token's bytes at the ceiling
	// would take, over MedianUS, in percent.
	PctCeiling float64
	TokPerS    float64 // 1e6 / MedianUS: what the GEMVs alone allow
	// ClockSamples is how many of the mode's timed batches NVML was read
	// after (0 without NVML); ThrottledPct the share of them with a
	// clock-lowering reason active (on the H200 the software power cap
	// at 700 W, which engines decoding without pause met on some
	// machines), and MinSMMHz the lowest SM clock among them.
	ClockSamples int
	ThrottledPct float64
	MinSMMHz     int
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
	// Trials are ChainOptions.Trials' timings, in order, in the mode
	// they ran (with PDL edges under ChainOptions.PDL), and TrialVariants
	// their variants as run: the cubin loaded and the PDL shared memory.
	Trials        []ChainTiming
	TrialVariants [][]ChainVariant
	// Attribution is ChainOptions.Attribute's timings, one per (format,
	// shape) of the stages, in the order each first runs.
	Attribution []ChainAttribution
	// MaxRelErr is the largest relative L2 error of a stage's output
	// against its float64 reference (the stage's own input x).
	MaxRelErr float64
	GPUName   string
	// Spills are the variants the chain compiled from this build's source
	// (ChainStage.Cubin or ChainVariant.Cubin nil) whose kernels spill, in
	// the order loaded: the tuner prunes such variants, so a token that
	// runs one after a source change times the spill with it.
	Spills []ChainSpill
}

// ChainSpill is a variant compiled for a chain whose kernel spills
// registers to local memory (ptxas -v).
type ChainSpill struct {
	Format     string
	Params     space.Params
	Registers  int
	SpillBytes int // spill stores per thread
}

// ChainAttribution is the token with PDL edges with every stage of one
// (format, shape) run by the streaming read of its weights
// (ChainOptions.Attribute).
type ChainAttribution struct {
	Job    Job   // the format and shape the read stages had
	Stages int   // how many stages of the token it runs
	Bytes  int64 // their weight bytes
	ChainTiming
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

// chainTokens is how many tokens one timed batch replays unless
// ChainOptions.BatchTokens says otherwise.
const chainTokens = 5

// Chain runs the stages as one token on GPU ordinal, each stage's x the
// first Cols values of the stage before's y (the first stage's a random
// x), every stage with weights of its own in device memory (a token reads
// far more than L2 holds, as a model does), captured in one CUDA graph
// (with ChainOptions.PDL a second one with PDL edges over the same
// buffers, and one graph per trial). It checks every stage's output
// against the float64 reference of the input it read (the PDL graph's
// against those bits, and in a trial's graph the stages the trial
// changes), then times the graphs: warm-up, then Samples batches of
// chainTokens tokens between CUDA events, the graphs alternating. Stages
// of one (format, shape, layout) share their host weights (random,
// quantized once) and are copied to their own device memory.
func Chain(ctx context.Context, ordinal int, stages []ChainStage, opts ChainOptions) (ChainResult, error) {
	res := ChainResult{Stages: len(stages)}
	if err := CheckChain(stages); err != nil {
		return res, err
	}
	if err := checkTrials(stages, opts.Trials); err != nil {
		return res, err
	}
	if opts.Samples <= 0 {
		opts.Samples = 21
	}
	if opts.BatchTokens <= 0 {
		opts.BatchTokens = chainTokens
	}
	dev, err := gpu.Open(ordinal)
	if err != nil {
		return res, err
	}
	defer dev.Close()
	info := dev.Info()
	res.GPUName = info.Name
	opts.Recorded = opts.Recorded && opts.PDL && mixedModes(stages)
	opts.Attribute = opts.Attribute && opts.PDL
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

	// Host data: one quantized matrix per (format, shape, layout), for the
	// stages' layouts and the trials'.
	raws := map[weightKey][]byte{}   // raw bytes, for the reference
	packed := map[weightKey][]byte{} // in the stage's layout
	pack := func(name, format string, rows, cols, layout int) error {
		k := weightKey{format, rows, cols, layout}
		if _, ok := packed[k]; ok {
			return nil
		}
		fam, _ := variants.FamilyOf(format)
		rk := weightKey{format, rows, cols, 0}
		raw, ok := raws[rk]
		if !ok {
			var err error
			if raw, err = chainWeights(fam.Format(), rows, cols); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			raws[rk] = raw
		}
		b, err := fam.Repack(raw, rows, cols, layout)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		packed[k] = b
		return nil
	}
	for _, st := range stages {
		if err := pack(st.Name, st.Format, st.Rows, st.Cols, st.Params.L); err != nil {
			return res, err
		}
	}
	for _, t := range opts.Trials {
		for _, v := range t.Variants {
			if err := pack(v.Params.ID(), v.Format, v.Rows, v.Cols, v.Params.L); err != nil {
				return res, err
			}
		}
	}
	x0 := make([]float32, inputLen(stages))
	rng := rand.New(rand.NewPCG(7, 11))
	for i := range x0 {
		x0[i] = float32(rng.Float64()*2 - 1)
	}

	// Device data and modules (one per variant, however many stages run
	// it), then the graphs.
	mods := chainModules{nv: nv, arch: info.Arch, mods: map[chainVariantKey]gpu.Module{},
		fns: map[chainVariantKey]gpu.Function{}, shared: map[chainVariantKey]int{}, cubins: map[chainVariantKey][]byte{}}
	devs := make([]chainDev, len(stages))
	trialW := map[weightKey][]gpu.DevPtr{} // a trial layout's weights, per stage
	var x gpu.DevPtr
	var graphs []gpu.GraphExec      // plain, then with PDL edges when asked
	var trialGraphs []gpu.GraphExec // one per trial
	var readGraphs []gpu.GraphExec  // chainReadModes', under opts.Reads
	var readNames []string          // their modes' names
	var attrGraphs []gpu.GraphExec  // one per res.Attribution, under opts.Attribute
	var trialStages [][]ChainStage  // each trial's stages
	var readOut, readX gpu.DevPtr
	defer dev.Do(func(c *gpu.Ctx) error {
		for _, g := range slices.Concat(graphs, trialGraphs, readGraphs, attrGraphs) {
			c.DestroyGraphExec(g)
		}
		if w.ceilingMod != 0 {
			c.UnloadModule(w.ceilingMod)
		}
		for _, p := range []gpu.DevPtr{readOut, readX, x} {
			if p != 0 {
				c.Free(p)
			}
		}
		for _, d := range devs {
			if d.w != 0 {
				c.Free(d.w)
			}
			if d.y != 0 {
				c.Free(d.y)
			}
		}
		for _, ws := range trialW {
			for _, p := range ws {
				if p != 0 {
					c.Free(p)
				}
			}
		}
		mods.unload(c)
		return nil
	})
	for i, st := range stages {
		fam, _ := variants.FamilyOf(st.Format)
		d := &devs[i]
		d.launch = fam.Launch(st.Params, st.Rows, st.Cols)
		b := packed[weightKey{st.Format, st.Rows, st.Cols, st.Params.L}]
		d.bytes = len(b)
		res.Bytes += int64(len(b))
		fn, err := mods.load(dev, st.Format, st.Params, st.Cubin, int(max(d.launch.SharedBytes, st.PDLShared)))
		if err != nil {
			return res, fmt.Errorf("%s: %w", st.Name, err)
		}
		d.fn = fn
		err = dev.Do(func(c *gpu.Ctx) error {
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
	// Each trial's stages and launches: the trial's variant where it has
	// one (its own copy of the weights when its layout differs), pinned
	// under PDL edges as a tuned stage is; the token's elsewhere.
	trialWeights := func(k weightKey, i int) (gpu.DevPtr, error) {
		if trialW[k] == nil {
			trialW[k] = make([]gpu.DevPtr, len(stages))
		}
		if trialW[k][i] != 0 {
			return trialW[k][i], nil
		}
		b := packed[k]
		err := dev.Do(func(c *gpu.Ctx) error {
			p, err := c.Alloc(len(b))
			if err != nil {
				return err
			}
			trialW[k][i] = p
			return c.CopyHtoD(p, b)
		})
		return trialW[k][i], err
	}
	trialDevs := make([][]chainDev, len(opts.Trials))
	for ti, t := range opts.Trials {
		ts, td := slices.Clone(stages), slices.Clone(devs)
		run := slices.Clone(t.Variants)
		for j := range run {
			v := &run[j]
			fam, _ := variants.FamilyOf(v.Format)
			launch := fam.Launch(v.Params, v.Rows, v.Cols)
			fn, err := mods.load(dev, v.Format, v.Params, v.Cubin, int(launch.SharedBytes))
			if err != nil {
				return res, fmt.Errorf("trial %d, %s %dx%d: %w", ti+1, v.Format, v.Rows, v.Cols, err)
			}
			v.Cubin = mods.cubins[chainVariantKey{v.Format, v.Params}]
			if opts.PDL && v.PDLShared == 0 {
				if v.PDLShared, err = mods.pin(dev, v.Format, v.Params, launch, info); err != nil {
					return res, fmt.Errorf("trial %d, %s: %w", ti+1, v.Params.ID(), err)
				}
			}
			for i, st := range stages {
				if st.Job() != v.Job() {
					continue
				}
				td[i].fn, td[i].launch = fn, launch
				ts[i].Params, ts[i].Cubin, ts[i].LaunchPDL, ts[i].PDLShared = v.Params, nil, true, v.PDLShared
				if v.Params.L != st.Params.L {
					if td[i].w, err = trialWeights(weightKey{v.Format, v.Rows, v.Cols, v.Params.L}, i); err != nil {
						return res, fmt.Errorf("%s with %s: %w", st.Name, v.Params.ID(), err)
					}
				}
			}
		}
		trialStages = append(trialStages, ts)
		trialDevs[ti] = td
		res.TrialVariants = append(res.TrialVariants, run)
	}
	res.Spills = mods.spills
	err = dev.Do(func(c *gpu.Ctx) error {
		var err error
		if x, err = c.Alloc(4 * len(x0)); err != nil {
			return err
		}
		if err := c.CopyHtoD(x, gpu.Bytes(x0)); err != nil {
			return err
		}
		for _, ds := range slices.Concat([][]chainDev{devs}, trialDevs) {
			for i, st := range stages {
				d := &ds[i]
				if d.args, err = gpu.NewArgs(d.w, stageX(stages, ds, i, x), d.y, int32(st.Rows), int32(st.Cols)); err != nil {
					return err
				}
			}
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
		for ti := range opts.Trials {
			g, err := captureChain(c, s, trialStages[ti], trialDevs[ti], chainMode{pdl: opts.PDL})
			if err != nil {
				return err
			}
			trialGraphs = append(trialGraphs, g)
		}
		if !opts.Reads && !opts.Attribute {
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
			if m.pdl && !opts.PDL || !opts.Reads {
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
		if !opts.Attribute {
			return nil
		}
		cfg := gpu.LaunchConfig{Grid: readLaunch.Grid, Block: readLaunch.Block, SharedBytes: pinned}
		index := map[Job]int{} // into res.Attribution
		for i, st := range stages {
			k, ok := index[st.Job()]
			if !ok {
				k = len(res.Attribution)
				index[st.Job()] = k
				res.Attribution = append(res.Attribution, ChainAttribution{Job: st.Job()})
			}
			res.Attribution[k].Stages++
			res.Attribution[k].Bytes += int64(devs[i].bytes)
		}
		for _, a := range res.Attribution {
			g, err := captureAttribution(c, s, stages, devs, a.Job, fn, cfg, readOut, x)
			if err != nil {
				return err
			}
			attrGraphs = append(attrGraphs, g)
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
	// edges the same token must give the same bits. A trial's token is
	// checked where the trial changes it.
	var ys [][]float32
	var modeYs [][][]float32  // per graph after the first
	var trialYs [][][]float32 // per trial
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
		for ti, g := range trialGraphs {
			y, err := runChain(c, g, stages, trialDevs[ti])
			if err != nil {
				return err
			}
			trialYs = append(trialYs, y)
		}
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("running the token: %w", err)
	}
	raw := func(st ChainStage) []byte { return raws[weightKey{st.Format, st.Rows, st.Cols, 0}] }
	// input is the x stage i read, given the token's outputs ys.
	input := func(ys [][]float32, i int) []float32 {
		if src := xSource(stages, i); src >= 0 {
			return ys[src][:stages[i].Cols]
		}
		return x0[:stages[i].Cols]
	}
	for i, st := range stages {
		if err := ctx.Err(); err != nil { // each check is a float64 GEMV on the CPU: stop between them
			return res, err
		}
		e, err := checkStage(st, raw(st), input(ys, i), ys[i])
		if err != nil {
			return res, err
		}
		res.MaxRelErr = max(res.MaxRelErr, e)
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
	for ti, tys := range trialYs {
		for i, st := range trialStages[ti] {
			if st.Params == stages[i].Params {
				continue
			}
			if err := ctx.Err(); err != nil {
				return res, err
			}
			e, err := checkStage(st, raw(st), input(tys, i), tys[i])
			if err != nil {
				return res, fmt.Errorf("trial %d: %w", ti+1, err)
			}
			res.MaxRelErr = max(res.MaxRelErr, e)
		}
	}

	// Time it: batches of opts.BatchTokens tokens between CUDA events, the
	// graphs alternating batch by batch, so a drift of the clocks shifts
	// every mode alike. After each batch NVML says whether the clocks were
	// lowered then (outside the events: the read is not timed).
	timed := slices.Concat(graphs, trialGraphs, readGraphs, attrGraphs)
	samples := make([][]float64, len(timed))
	clocks := make([][]gpu.Clocks, len(timed))
	readClocks := chainClockReader(info)
	defer readClocks.close()
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
			if err := ctx.Err(); err != nil {
				return err
			}
			for gi, g := range timed {
				if err := c.Record(e0, 0); err != nil {
					return err
				}
				for t := 0; t < opts.BatchTokens; t++ {
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
					samples[gi] = append(samples[gi], d.Seconds()*1e6/float64(opts.BatchTokens))
					if cl, ok := readClocks.read(); ok {
						clocks[gi] = append(clocks[gi], cl)
					}
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
		timings[i] = chainTiming(smp, clocks[i], res.Bytes, res.CeilingGBs)
	}
	res.ChainTiming = timings[0]
	if len(graphs) > 1 {
		res.PDL = &timings[1]
	}
	if len(graphs) > 2 {
		res.Recorded = &timings[2]
	}
	res.Trials = timings[len(graphs) : len(graphs)+len(trialGraphs)]
	for i, name := range readNames {
		res.Reads = append(res.Reads, ChainModeTiming{Mode: name, ChainTiming: timings[len(graphs)+len(trialGraphs)+i]})
	}
	for i := range res.Attribution {
		res.Attribution[i].ChainTiming = timings[len(graphs)+len(trialGraphs)+len(readGraphs)+i]
	}
	return res, nil
}

// weightKey names one quantized matrix of a chain in one layout.
type weightKey struct {
	format     string
	rows, cols int
	layout     int
}

// checkStage compares stage st's output y with the float64 reference of
// the input it read, in the stage's error bound, and returns the
// relative L2 error.
func checkStage(st ChainStage, raw []byte, in, y []float32) (float64, error) {
	fam, _ := variants.FamilyOf(st.Format)
	ref, err := fam.Format().Reference(raw, in, st.Rows, st.Cols)
	if err != nil {
		return 0, err
	}
	e, finite := relL2(y, ref)
	if !finite || !(e <= fam.ErrorBound(st.Params)) {
		return e, fmt.Errorf("%s (%s %dx%d, %s): relative L2 error %.3g against the float64 reference, bound %.3g",
			st.Name, st.Format, st.Rows, st.Cols, st.Params.ID(), e, fam.ErrorBound(st.Params))
	}
	return e, nil
}

// checkTrials checks that every trial's variants run a (format, shape)
// of the token that their gates accept, once per trial.
func checkTrials(stages []ChainStage, trials []ChainTrial) error {
	for ti, t := range trials {
		seen := map[Job]bool{}
		for _, v := range t.Variants {
			if seen[v.Job()] {
				return fmt.Errorf("chain trial %d: two variants for %s %dx%d", ti+1, v.Format, v.Rows, v.Cols)
			}
			seen[v.Job()] = true
			if !slices.ContainsFunc(stages, func(st ChainStage) bool { return st.Job() == v.Job() }) {
				return fmt.Errorf("chain trial %d: no stage of the token is %s %dx%d", ti+1, v.Format, v.Rows, v.Cols)
			}
			fam, err := variants.FamilyOf(v.Format)
			if err != nil {
				return fmt.Errorf("chain trial %d: %w", ti+1, err)
			}
			if err := fam.Gate(v.Params, v.Rows, v.Cols); err != nil {
				return fmt.Errorf("chain trial %d: %s cannot run %dx%d: %w", ti+1, v.Params.ID(), v.Rows, v.Cols, err)
			}
		}
	}
	return nil
}

// chainVariantKey names one loaded kernel of a chain.
type chainVariantKey struct {
	format string
	params space.Params
}

// chainModules loads each variant of a chain once: its stored cubin, or
// this build's source compiled here.
type chainModules struct {
	nv     *gpu.NVRTC
	arch   gpu.Arch
	mods   map[chainVariantKey]gpu.Module
	fns    map[chainVariantKey]gpu.Function
	shared map[chainVariantKey]int    // the dynamic shared memory limit set per function
	cubins map[chainVariantKey][]byte // what each was loaded from
	spills []ChainSpill               // those compiled here that spill
}

// load returns the variant's kernel, loading it on first use, with its
// dynamic shared memory limit raised to at least shared bytes.
func (m *chainModules) load(dev *gpu.Device, format string, p space.Params, cubin []byte, shared int) (gpu.Function, error) {
	k := chainVariantKey{format, p}
	_, loaded := m.fns[k]
	if !loaded && cubin == nil {
		fam, _ := variants.FamilyOf(format)
		src, err := fam.Source(p)
		if err != nil {
			return 0, err
		}
		var log string
		if cubin, log, err = m.nv.Compile(src, format+".cu", m.arch, compileOptions(m.nv.Version)...); err != nil {
			return 0, fmt.Errorf("compiling %s: %w", p.ID(), err)
		}
		if regs, spills := parsePtxasLog(log); spills > 0 {
			m.spills = append(m.spills, ChainSpill{Format: format, Params: p, Registers: regs, SpillBytes: spills})
		}
	}
	var fn gpu.Function
	err := dev.Do(func(c *gpu.Ctx) error {
		var ok bool
		if fn, ok = m.fns[k]; !ok {
			mod, err := c.LoadModule(cubin)
			if err != nil {
				return err
			}
			m.mods[k], m.cubins[k] = mod, cubin
			if fn, err = c.Function(mod, variants.KernelName); err != nil {
				return err
			}
			m.fns[k] = fn
		}
		// The function's limit is the largest any of its stages needs.
		if shared > 48*1024 && shared > m.shared[k] {
			if err := c.SetMaxDynamicShared(fn, shared); err != nil {
				return err
			}
			m.shared[k] = shared
		}
		return nil
	})
	return fn, err
}

// pin returns the loaded variant's PDL shared memory at launch
// (pinnedShared), raising its limit as that needs.
func (m *chainModules) pin(dev *gpu.Device, format string, p space.Params, launch variants.Launch, info gpu.Info) (uint32, error) {
	k := chainVariantKey{format, p}
	var pinned uint32
	err := dev.Do(func(c *gpu.Ctx) error {
		limit := m.shared[k]
		var err error
		pinned, err = pinnedShared(c, m.fns[k], launch, info, &limit)
		m.shared[k] = limit
		return err
	})
	return pinned, err
}

// unload unloads every module.
func (m *chainModules) unload(c *gpu.Ctx) {
	for _, mod := range m.mods {
		c.UnloadModule(mod)
	}
}

// chainTiming summarises a mode's µs per token and the clocks read after
// its batches.
func chainTiming(samples []float64, clocks []gpu.Clocks, bytes int64, ceilingGBs float64) ChainTiming {
	var t ChainTiming
	t.MedianUS, t.LoUS, t.HiUS = summarize(samples)
	if t.MedianUS > 0 {
		t.TokPerS = 1e6 / t.MedianUS
		t.PctCeiling = 100 * (float64(bytes) / (ceilingGBs * 1e3)) / t.MedianUS
	}
	throttled := 0
	for i, c := range clocks {
		if c.Throttled {
			throttled++
		}
		if i == 0 || c.SMMHz < t.MinSMMHz {
			t.MinSMMHz = c.SMMHz
		}
	}
	if t.ClockSamples = len(clocks); t.ClockSamples > 0 {
		t.ThrottledPct = 100 * float64(throttled) / float64(len(clocks))
	}
	return t
}

// chainClocks reads the chain's GPU's clocks through NVML, where NVML
// opens; read says false without it.
type chainClocks struct {
	nvml *gpu.NVML
	dev  *gpu.NVMLDevice
}

// chainClockReader opens NVML for the GPU of info, or returns a reader
// that reads nothing.
func chainClockReader(info gpu.Info) chainClocks {
	n, err := gpu.OpenNVML()
	if err != nil {
		return chainClocks{}
	}
	d, err := n.Device(info.UUID)
	if err != nil {
		n.Close()
		return chainClocks{}
	}
	return chainClocks{nvml: n, dev: d}
}

func (c chainClocks) read() (gpu.Clocks, bool) {
	if c.dev == nil {
		return gpu.Clocks{}, false
	}
	cl, err := c.dev.Clocks()
	return cl, err == nil
}

func (c chainClocks) close() {
	if c.nvml != nil {
		c.nvml.Close()
	}
}

// chainDev is one stage on the device: its weights and output, the
// kernel, its launch and its arguments (weights, its x (stageX), y, rows,
// cols).
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
	return captureGraph(c, s, len(devs), func(i int) error { return launchStage(c, s, stages, devs, i, m) })
}

// launchStage launches stage i's GEMV on s as captureChain's mode m says.
func launchStage(c *gpu.Ctx, s gpu.Stream, stages []ChainStage, devs []chainDev, i int, m chainMode) error {
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
}

// captureAttribution captures the token with PDL edges before every stage
// but the first: each stage of job run by the streaming read fn with cfg
// over its weights, waiting first, then reading the stage's own x
// (stageX) and writing stand-in values to its y, so that the stage after
// it reads an x in L2 as after a GEMV; the others as captureChain runs
// them with PDL edges; and instantiates the graph.
func captureAttribution(c *gpu.Ctx, s gpu.Stream, stages []ChainStage, devs []chainDev, job Job, fn gpu.Function, cfg gpu.LaunchConfig, out, x gpu.DevPtr) (gpu.GraphExec, error) {
	return captureGraph(c, s, len(devs), func(i int) error {
		if stages[i].Job() != job {
			return launchStage(c, s, stages, devs, i, chainMode{pdl: true})
		}
		if err := launchRead(c, s, fn, cfg, devs[i], out, stageX(stages, devs, i, x), 4*stages[i].Cols, devs[i].y, stages[i].Rows, i > 0, true, false); err != nil {
			return fmt.Errorf("%s as a read: %w", stages[i].Name, err)
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
	return captureGraph(c, s, len(devs), func(i int) error {
		return launchRead(c, s, fn, cfg, devs[i], out, x, chainReadX, 0, 0, pdl && i > 0, wait, early)
	})
}

// launchRead launches the streaming read fn (chain_read) with cfg on s
// over d's weights (rounded down to 16 bytes): with a PDL edge where pdl,
// waiting at griddepcontrol.wait first where wait, reading xBytes of x
// (rounded down to 16; none where x is 0) after it, its first loads issued
// before it where early, and writing yn stand-in values to y after its
// loads (none where y is 0).
func launchRead(c *gpu.Ctx, s gpu.Stream, fn gpu.Function, cfg gpu.LaunchConfig, d chainDev, out, x gpu.DevPtr, xBytes int, y gpu.DevPtr, yn int, pdl, wait, early bool) error {
	flag := func(b bool) int32 {
		if b {
			return 1
		}
		return 0
	}
	args, err := gpu.NewArgs(d.w, uint32(d.bytes/16), out, flag(wait), flag(early), x, uint32(xBytes/16), y, uint32(yn))
	if err != nil {
		return err
	}
	cfg.Stream, cfg.PDL = s, pdl
	return c.Launch(fn, cfg, args)
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
// their variants can run, and each x no longer than the y it is read from.
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
		if st.XBack < 0 {
			return fmt.Errorf("chain stage %s: XBack %d: want 0 or more stages back", st.Name, st.XBack)
		}
		if src := xSource(stages, i); src >= 0 && st.Cols > stages[src].Rows {
			return fmt.Errorf("chain stage %s reads %d values of x, but %s writes only %d", st.Name, st.Cols, stages[src].Name, stages[src].Rows)
		}
	}
	return nil
}

// xSource is the index of the stage whose y stage i reads as its x, or -1
// for the token's input x.
func xSource(stages []ChainStage, i int) int {
	return max(i-max(stages[i].XBack, 1), -1)
}

// stageX is the device x stage i reads: the y of its xSource in devs, or
// the token's x.
func stageX(stages []ChainStage, devs []chainDev, i int, x gpu.DevPtr) gpu.DevPtr {
	if src := xSource(stages, i); src >= 0 {
		return devs[src].y
	}
	return x
}

// inputLen is the length of the token's input x: the longest x of the
// stages that read it.
func inputLen(stages []ChainStage) int {
	n := 0
	for i, st := range stages {
		if xSource(stages, i) < 0 {
			n = max(n, st.Cols)
		}
	}
	return n
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
