package tuner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"golang.org/x/sync/errgroup"

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
	Cubin []byte
	Err   error
}

// compiler builds cubins with one NVRTC library for one arch, in parallel,
// and keeps them on disk keyed by (source, arch, NVRTC version, options),
// so a re-run does not recompile.
type compiler struct {
	nvrtc *gpu.NVRTC
	arch  gpu.Arch
	dir   string // "" = no disk cache
	opts  []string
}

func newCompiler(nv *gpu.NVRTC, arch gpu.Arch) *compiler {
	c := &compiler{nvrtc: nv, arch: arch}
	if d, err := os.UserCacheDir(); err == nil {
		c.dir = filepath.Join(d, "gemvtune", "cubins")
	}
	return c
}

func (c *compiler) key(code string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%q\x00", c.arch, c.nvrtc.Version, c.opts)
	h.Write([]byte(code))
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// compileAll compiles every source with at most GOMAXPROCS programs at
// once. A failing program does not stop the others: its error is in its
// result.
func (c *compiler) compileAll(ctx context.Context, srcs []source, done func()) []compiled {
	out := make([]compiled, len(srcs))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	var mkdir sync.Once
	for i, s := range srcs {
		g.Go(func() error {
			out[i] = compiled{source: s}
			if ctx.Err() != nil {
				out[i].Err = ctx.Err()
				return nil
			}
			out[i].Cubin, out[i].Err = c.compileOne(s, &mkdir)
			if done != nil {
				done()
			}
			return nil
		})
	}
	_ = g.Wait()
	return out
}

func (c *compiler) compileOne(s source, mkdir *sync.Once) ([]byte, error) {
	var path string
	if c.dir != "" {
		path = filepath.Join(c.dir, c.key(s.Code)+".cubin")
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return b, nil
		}
	}
	cubin, _, err := c.nvrtc.Compile(s.Code, s.ID+".cu", c.arch, c.opts...)
	if err != nil {
		var ce *gpu.CompileError
		if errors.As(err, &ce) {
			return nil, fmt.Errorf("%s", ce.Error())
		}
		return nil, err
	}
	if path != "" {
		mkdir.Do(func() { _ = os.MkdirAll(c.dir, 0o755) })
		tmp := path + fmt.Sprintf(".%d.tmp", os.Getpid())
		if os.WriteFile(tmp, cubin, 0o644) == nil {
			_ = os.Rename(tmp, path) // atomic: a reader never sees half a cubin
		}
	}
	return cubin, nil
}
