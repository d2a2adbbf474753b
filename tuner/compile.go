package tuner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"sync"

	"github.com/gemvtune/gemvtune/internal/atomicfile"
	"github.com/gemvtune/gemvtune/internal/gpu"
	"github.com/gemvtune/gemvtune/space"
)

// source is one program to compile: a candidate's CUDA source.
type source struct {
	ID     string
	Params space.Params
	Code   string
}

// compiled is the outcome of compiling one source.
type compiled struct {
	source
	Cubin     []byte
	Err       error
	Registers int // from ptxas -v; 0 if unknown
	Spills    int // spill store bytes from ptxas -v
}

var (
	ptxasRegs   = regexp.MustCompile(`Used (\d+) registers`)
	ptxasSpills = regexp.MustCompile(`(\d+) bytes spill stores`)
)

// parsePtxasLog reads the register count and spill stores from ptxas -v.
func parsePtxasLog(log string) (regs, spills int) {
	if m := ptxasRegs.FindStringSubmatch(log); m != nil {
		regs, _ = strconv.Atoi(m[1])
	}
	if m := ptxasSpills.FindStringSubmatch(log); m != nil {
		spills, _ = strconv.Atoi(m[1])
	}
	return regs, spills
}

// cachedLogUsable reports whether a cached ptxas log still says how many
// registers its kernel uses.
func cachedLogUsable(log string) bool {
	regs, _ := parsePtxasLog(log)
	return regs > 0
}

// compiler builds cubins with one NVRTC library for one arch, in parallel,
// and keeps them on disk keyed by (source, arch, NVRTC version, options),
// so a re-run does not recompile.
type compiler struct {
	nvrtc *gpu.NVRTC
	arch  gpu.Arch
	dir   string // "" = no disk cache
	opts  []string
	slots *slots // GOMAXPROCS compiles at once, whoever asks
}

func newCompiler(nv *gpu.NVRTC, arch gpu.Arch) *compiler {
	c := &compiler{nvrtc: nv, arch: arch, opts: compileOptions(nv.Version), slots: newSlots(runtime.GOMAXPROCS(0))}
	if d, err := os.UserCacheDir(); err == nil {
		c.dir = filepath.Join(d, "gemvtune", "cubins")
	}
	return c
}

// nvrtcCaching is the first NVRTC that keeps its own cache of compiles.
// A compile it serves from that cache runs no ptxas, so its log says
// nothing of registers or spills, and the tuner could judge neither the
// variant's launch-bounds floors nor its spills.
var nvrtcCaching = gpu.Version{Major: 12, Minor: 9}

// compileOptions are the NVRTC options of every tuner compile with NVRTC
// version v: ptxas's report (-v), and where NVRTC caches, no NVRTC cache
// (the tuner keeps its own, log beside cubin).
func compileOptions(v gpu.Version) []string {
	opts := []string{"--ptxas-options=-v"}
	if !v.Less(nvrtcCaching) {
		opts = append(opts, "--no-cache")
	}
	return opts
}

func (c *compiler) key(code string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%q\x00", c.arch, c.nvrtc.Version, c.opts)
	h.Write([]byte(code))
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// compileAll compiles every source, each in one of the compiler's slots
// (GOMAXPROCS shared by every caller) at priority prio: lower is served
// first (buildFormat passes the format's place in the run). A failing
// program does not stop the others: its error is in its result.
func (c *compiler) compileAll(ctx context.Context, prio int, srcs []source, done func()) []compiled {
	out := make([]compiled, len(srcs))
	var wg sync.WaitGroup
	var mkdir sync.Once
	for i, s := range srcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = compiled{source: s}
			if err := c.slots.acquire(ctx, prio); err != nil {
				out[i].Err = err
				return
			}
			defer c.slots.release()
			if err := ctx.Err(); err != nil {
				out[i].Err = err
				return
			}
			var log string
			out[i].Cubin, log, out[i].Err = c.compileOne(s, &mkdir)
			out[i].Registers, out[i].Spills = parsePtxasLog(log)
			if done != nil {
				done()
			}
		}()
	}
	wg.Wait()
	return out
}

// compileOne returns the cubin and ptxas's log, from the disk cache when
// present (the log is kept beside the cubin).
func (c *compiler) compileOne(s source, mkdir *sync.Once) ([]byte, string, error) {
	var path string
	if c.dir != "" {
		path = filepath.Join(c.dir, c.key(s.Code)+".cubin")
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			// A cubin whose log lost ptxas's register count is compiled
			// again: without the count the launch-bounds floors of the
			// variant could not be judged (buildFormat).
			if log, err := os.ReadFile(path + ".log"); err == nil && cachedLogUsable(string(log)) {
				return b, string(log), nil
			}
		}
	}
	cubin, log, err := c.nvrtc.Compile(s.Code, s.ID+".cu", c.arch, c.opts...)
	if err != nil {
		var ce *gpu.CompileError
		if errors.As(err, &ce) {
			return nil, log, fmt.Errorf("%s", ce.Error())
		}
		return nil, log, err
	}
	if path != "" {
		mkdir.Do(func() { _ = os.MkdirAll(c.dir, 0o755) })
		writeAtomic(path+".log", []byte(log))
		writeAtomic(path, cubin) // after the log: a cubin on disk always has its log
	}
	return cubin, log, nil
}

// writeAtomic replaces path with b (atomicfile), so a reader never sees
// half a file. Errors only cost a recompile later.
func writeAtomic(path string, b []byte) {
	_ = atomicfile.Write(path, func(w io.Writer) error { _, err := w.Write(b); return err })
}
