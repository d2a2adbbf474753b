package tuner

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"syscall"
	"time"
	"unsafe"

	"github.com/gemvtune/gemvtune/internal/gpu"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

// WorkerEnv, when set in a process's environment, turns the process into a
// measurement worker (see MaybeWorker). The tuner starts its own executable
// with it; cmd/autotune and GPU test binaries call MaybeWorker first thing.
const WorkerEnv = "GEMVTUNE_WORKER"

// StopSignals are the signals that stop a run cleanly: the process that
// runs the tuner cancels its context on them (finished decisions stay
// saved), and its measurement workers ignore them. SIGTERM is what
// service managers, container runtimes and timeout(1) send.
var StopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// MaybeWorker runs the measurement worker on stdin/stdout and exits the
// process when WorkerEnv is set; otherwise it returns at once.
func MaybeWorker() {
	if os.Getenv(WorkerEnv) == "" {
		return
	}
	// Ctrl-C (and a SIGTERM sent to the group, as by timeout(1)) reaches
	// the whole process group; the parent decides when its worker stops (it
	// closes stdin, or kills it), so the job in flight ends cleanly instead
	// of looking like a crash.
	signal.Ignore(StopSignals...)
	os.Exit(serveWorker(os.Stdin, os.Stdout))
}

// Timeouts of the worker's own waits; the parent's watchdog is longer.
const (
	verifyTimeout = 5 * time.Second
	roundTimeout  = 20 * time.Second
	targetBatch   = 200 * time.Microsecond // GPU time of one timed batch
	maxBatch      = 1000
	// minWarmup is the GPU time of the warm-up rounds each measure call
	// runs before it keeps samples; maxWarmupRounds bounds them.
	minWarmup       = 50 * time.Millisecond
	maxWarmupRounds = 50
)

type loadedModule struct {
	params space.Params
	mod    gpu.Module
	fn     gpu.Function
	attrs  moduleAttrs
}

type worker struct {
	dev        *gpu.Device
	info       gpu.Info
	mods       map[string]*loadedModule
	shape      *workerShape
	ceilingMod gpu.Module   // ceilingSource's module, loaded once (measureCeiling)
	ceiling    gpu.Function // its streaming-read kernel
}

// workerShape is the device state of the current job.
type workerShape struct {
	// twins are this shape's g variants (request.RowGroups): the module of
	// their g=0 variant with their own params.
	twins      map[string]*loadedModule
	fam        variants.Family
	rows, cols int
	bytes      int
	data       *jobData
	copies     map[int][]gpu.DevPtr // layout → rotating weight copies
	nCopies    int
	x, y       gpu.DevPtr
	stockBits  []uint32
	stream     gpu.Stream
	batch      int
	graphs     map[string]gpu.GraphExec
}

func serveWorker(in io.Reader, out io.Writer) int {
	w := &worker{mods: map[string]*loadedModule{}}
	dec := json.NewDecoder(bufio.NewReaderSize(in, 1<<20))
	enc := json.NewEncoder(out)
	for {
		var req request
		if err := dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return 0
			}
			_ = enc.Encode(response{Err: "bad request: " + err.Error(), Fatal: true})
			return 1
		}
		if req.Op == opQuit {
			_ = enc.Encode(response{OK: true})
			return 0
		}
		resp := w.handle(req)
		if resp.Err != "" && !resp.Fatal && w.dev != nil {
			// A sticky error can surface on a later call: probe the context.
			if err := w.dev.Do(func(c *gpu.Ctx) error { return c.Synchronize() }); gpu.IsSticky(err) {
				resp.Fatal = true
			}
		}
		if err := enc.Encode(resp); err != nil {
			return 1
		}
		if resp.Fatal {
			return 3
		}
	}
}

func fail(status string, err error) response {
	return response{Err: err.Error(), Status: status, Fatal: gpu.IsSticky(err)}
}

func (w *worker) handle(req request) response {
	if req.Op != opInit && w.dev == nil {
		return response{Err: "worker: init first", Fatal: true}
	}
	switch req.Op {
	case opInit:
		return w.init(req)
	case opModules:
		return w.loadModules(req)
	case opShape:
		return w.setShape(req)
	case opVerify:
		return w.verify(req.ID)
	case opMeasure:
		return w.measure(req.IDs, req.Rounds)
	}
	return response{Err: fmt.Sprintf("worker: unknown op %q", req.Op), Fatal: true}
}

func (w *worker) init(req request) response {
	dev, err := gpu.Open(req.Device)
	if err != nil {
		return response{Err: err.Error(), Fatal: true}
	}
	w.dev, w.info = dev, dev.Info()
	gbs, err := w.measureCeiling(req.Ceiling)
	if err != nil {
		return response{Err: "read ceiling: " + err.Error(), Fatal: true}
	}
	info := w.info
	return response{OK: true, Info: &info, CeilingGBs: gbs}
}

func (w *worker) loadModules(req request) response {
	attrs := map[string]moduleAttrs{}
	err := w.dev.Do(func(c *gpu.Ctx) error {
		for _, m := range req.Modules {
			if old, ok := w.mods[m.ID]; ok {
				_ = c.UnloadModule(old.mod)
				delete(w.mods, m.ID)
			}
			mod, err := c.LoadModule(m.Cubin)
			if err != nil {
				if gpu.IsSticky(err) {
					return err
				}
				attrs[m.ID] = moduleAttrs{Err: err.Error()}
				continue
			}
			fn, err := c.Function(mod, variants.KernelName)
			if err != nil {
				attrs[m.ID] = moduleAttrs{Err: err.Error()}
				_ = c.UnloadModule(mod)
				continue
			}
			fi, err := c.FuncInfo(fn)
			if err != nil {
				attrs[m.ID] = moduleAttrs{Err: err.Error()}
				continue
			}
			a := moduleAttrs{Registers: fi.Registers, LocalBytes: fi.LocalBytes, SharedBytes: fi.SharedBytes}
			w.mods[m.ID] = &loadedModule{params: m.Params, mod: mod, fn: fn, attrs: a}
			attrs[m.ID] = a
		}
		return nil
	})
	if err != nil {
		return fail("fault", err)
	}
	return response{OK: true, Attrs: attrs}
}

// setShape frees the previous job's buffers, makes fresh random data, runs
// stock, checks it against the float64 reference, and answers the
// occupancy of every loaded module at this shape.
func (w *worker) setShape(req request) response {
	w.freeShape()
	fam, err := variants.FamilyOf(req.Format)
	if err != nil {
		return response{Err: err.Error()}
	}
	data, err := makeJobData(fam.Format(), req.Rows, req.Cols, req.Seed)
	if err != nil {
		return response{Err: err.Error()}
	}
	s := &workerShape{fam: fam, rows: req.Rows, cols: req.Cols, bytes: len(data.raw), data: data,
		copies: map[int][]gpu.DevPtr{}, graphs: map[string]gpu.GraphExec{}, twins: map[string]*loadedModule{}}
	s.nCopies = weightCopies(w.info.L2Bytes, s.bytes, req.WarmL2)
	est := float64(s.bytes)/3e12 + 3e-6
	s.batch = int(math.Ceil(targetBatch.Seconds() / est))
	s.batch = min(max(s.batch, s.nCopies), maxBatch)
	s.batch = (s.batch + s.nCopies - 1) / s.nCopies * s.nCopies
	w.shape = s
	attrs := map[string]moduleAttrs{}
	err = w.dev.Do(func(c *gpu.Ctx) error {
		var err error
		if s.stream, err = c.NewStream(); err != nil {
			return err
		}
		if s.x, err = c.Alloc(4 * req.Cols); err != nil {
			return err
		}
		if err = c.CopyHtoD(s.x, gpu.Bytes(data.x)); err != nil {
			return err
		}
		if s.y, err = c.Alloc(4 * req.Rows); err != nil {
			return err
		}
		for id, m := range w.mods {
			a := m.attrs
			l := fam.Launch(m.params, req.Rows, req.Cols)
			if err := w.prepare(c, m, l); err != nil {
				a.Err = err.Error()
			} else if a.BlocksPerSM, err = c.Occupancy(m.fn, int(l.Block[0]*l.Block[1]*l.Block[2]), int(l.SharedBytes)); err != nil {
				a.Err = err.Error()
			}
			limit := max(int(l.SharedBytes), w.info.SmemPerBlock) // what prepare left
			if a.Err == "" {
				if err := w.pin(c, m.fn, l, &a, &limit); err != nil {
					a.Err = err.Error()
				}
			}
			attrs[id] = a
			m.attrs.PDLShared = a.PDLShared
			if !req.RowGroups || a.Err != "" || m.params.S == 0 || m.params.G != 0 {
				continue
			}
			for _, g := range rowGroupTwins(m.params, req.Rows, a.BlocksPerSM, w.info.SMs) {
				t := *m
				t.params.G = g
				ta := a
				if err := w.pin(c, m.fn, fam.Launch(t.params, req.Rows, req.Cols), &ta, &limit); err != nil {
					ta.Err = err.Error()
				}
				t.attrs = ta
				s.twins[t.params.ID()] = &t
				attrs[t.params.ID()] = ta
			}
		}
		return nil
	})
	if err != nil {
		return fail("fault", fmt.Errorf("setting up %s %dx%d: %w", req.Format, req.Rows, req.Cols, err))
	}
	resp := w.verify(space.StockAlias)
	if !resp.OK {
		resp.Err = "stock: " + resp.Err
		return resp
	}
	resp.Attrs = attrs
	resp.Batch, resp.Copies = s.batch, s.nCopies
	return resp
}

// pin sets a.PDLShared, the shared memory of launch l with PDL (on sm_90+,
// where the tuner times PDL chains; elsewhere l's own).
func (w *worker) pin(c *gpu.Ctx, fn gpu.Function, l variants.Launch, a *moduleAttrs, limit *int) error {
	a.PDLShared = int(l.SharedBytes)
	if w.info.Arch.Major < 9 {
		return nil
	}
	s, err := pinnedShared(c, fn, l, w.info, limit)
	a.PDLShared = int(s)
	return err
}

// prepare raises the function's dynamic shared memory limit when needed.
func (w *worker) prepare(c *gpu.Ctx, m *loadedModule, l variants.Launch) error {
	if int(l.SharedBytes) > w.info.SmemPerBlock {
		return c.SetMaxDynamicShared(m.fn, int(l.SharedBytes))
	}
	return nil
}

// weights returns the rotating copies of the current job's weights in the
// given layout, uploading them on first use.
func (w *worker) weights(c *gpu.Ctx, layout int) ([]gpu.DevPtr, error) {
	s := w.shape
	if ptrs, ok := s.copies[layout]; ok {
		return ptrs, nil
	}
	b, err := s.fam.Repack(s.data.raw, s.rows, s.cols, layout)
	if err != nil {
		return nil, err
	}
	if len(b) != s.bytes {
		return nil, fmt.Errorf("layout %d has %d bytes, raw %d: repacking must keep the bytes", layout, len(b), s.bytes)
	}
	ptrs := make([]gpu.DevPtr, s.nCopies)
	for i := range ptrs {
		if ptrs[i], err = c.Alloc(len(b)); err != nil {
			return nil, err
		}
		if err := c.CopyHtoD(ptrs[i], b); err != nil {
			return nil, err
		}
	}
	s.copies[layout] = ptrs
	return ptrs, nil
}

func (w *worker) module(id string) (*loadedModule, error) {
	if id == space.StockAlias {
		id = space.Stock.ID()
	}
	m, ok := w.mods[id]
	if !ok && w.shape != nil {
		m, ok = w.shape.twins[id]
	}
	if !ok {
		return nil, fmt.Errorf("module %s not loaded", id)
	}
	return m, nil
}

// verify runs candidate id once on poisoned output and checks it: every
// output finite, within the family's bound of the reference, and, for
// exact-class candidates, bit-identical to stock. Stock ("v1") is checked
// against the reference only and becomes the comparison for the others.
func (w *worker) verify(id string) response {
	s := w.shape
	if s == nil {
		return response{Err: "verify: no shape set"}
	}
	m, err := w.module(id)
	if err != nil {
		return response{Err: err.Error(), Status: "fault"}
	}
	y := make([]float32, s.rows)
	err = w.dev.Do(func(c *gpu.Ctx) error {
		ptrs, err := w.weights(c, m.params.L)
		if err != nil {
			return err
		}
		if err := c.Memset(s.y, 0xFF, 4*s.rows); err != nil { // NaN poison
			return err
		}
		args, err := gpu.NewArgs(ptrs[0], s.x, s.y, int32(s.rows), int32(s.cols))
		if err != nil {
			return err
		}
		l := s.fam.Launch(m.params, s.rows, s.cols)
		if err := c.Launch(m.fn, gpu.LaunchConfig{Grid: l.Grid, Block: l.Block, SharedBytes: l.SharedBytes, Stream: s.stream}, args); err != nil {
			return err
		}
		if err := c.WaitStream(s.stream, verifyTimeout); err != nil {
			return err
		}
		return c.CopyDtoH(gpu.Bytes(y), s.y)
	})
	if errors.Is(err, gpu.ErrTimeout) {
		return response{Err: err.Error(), Status: "timeout", Fatal: true}
	}
	if err != nil {
		return fail("fault", err)
	}
	rel, finite := relL2(y, s.data.ref)
	resp := response{OK: true, RelErr: rel}
	bound := s.fam.ErrorBound(m.params)
	switch {
	case !finite:
		return response{Err: fmt.Sprintf("%d of %d outputs not finite (unwritten or NaN)", countNonFinite(y), len(y)), Status: "mismatch", RelErr: rel}
	case !(rel <= bound):
		return response{Err: fmt.Sprintf("relative L2 error %.3g > bound %.3g", rel, bound), Status: "mismatch", RelErr: rel}
	}
	bits := unsafe.Slice((*uint32)(unsafe.Pointer(&y[0])), len(y))
	if s.stockBits == nil {
		s.stockBits = append([]uint32(nil), bits...)
		return resp
	}
	var diffs int
	var maxAbs float64
	for i, b := range bits {
		if b != s.stockBits[i] {
			diffs++
			maxAbs = math.Max(maxAbs, math.Abs(float64(y[i])-float64(math.Float32frombits(s.stockBits[i]))))
		}
	}
	resp.MaxAbsDiff = maxAbs
	if diffs > 0 && s.fam.Class(m.params) == variants.Exact {
		return response{Err: fmt.Sprintf("exact class but %d of %d outputs differ from stock (max |diff| %.3g)", diffs, len(y), maxAbs),
			Status: "mismatch", RelErr: rel, MaxAbsDiff: maxAbs}
	}
	return resp
}

func countNonFinite(y []float32) int {
	n := 0
	for _, v := range y {
		if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
			n++
		}
	}
	return n
}

func (w *worker) freeShape() {
	s := w.shape
	if s == nil {
		return
	}
	w.shape = nil
	_ = w.dev.Do(func(c *gpu.Ctx) error {
		for _, g := range s.graphs {
			_ = c.DestroyGraphExec(g)
		}
		for _, ptrs := range s.copies {
			for _, p := range ptrs {
				_ = c.Free(p)
			}
		}
		_ = c.Free(s.x)
		_ = c.Free(s.y)
		if s.stream != 0 {
			_ = c.DestroyStream(s.stream)
		}
		return nil
	})
}

// weightCopies is how many copies of a job's weights its launches rotate
// over: enough that the rotation exceeds 4 × L2, so every launch reads
// DRAM; one when warm (Options.WarmL2).
func weightCopies(l2Bytes, bytes int, warm bool) int {
	if warm {
		return 1
	}
	return max(2, int(math.Ceil(4*float64(l2Bytes)/float64(bytes)))+1)
}
