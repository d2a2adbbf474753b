package variants

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune/space"
)

// hostPTX replaces, for the host build, the PTX a family file writes
// itself (the prelude's is in the shim): q4_K's dp4a with unsigned weight
// bytes. A replacement that no longer finds its text fails the test.
var hostPTX = map[string][2]string{
	"q4_K": {`asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(r) : "r"(a & 0xF0F0F0F0u), "r"(b), "r"(c));`,
		`r = c; for (int i = 0; i < 4; i++) r += (int)(((a & 0xF0F0F0F0u) >> (8 * i)) & 0xFF) * (int)(int8_t)(b >> (8 * i));`},
}

// TestFamiliesOnHost compiles each family's kernel file for the CPU with a
// shim for the prelude (testdata/hostemu) and runs its chunk loads and
// chunk expression over whole rows, lane by lane as a warp does, for every
// layout and activation path: on fresh random weights of shapes with one
// super-block, a K tail and interleaved tiles, y must be within the
// family's error bound of the float64 reference, and every layout of one
// activation path, and three rows per warp (37 rows: the last warp has dead
// rows), must give the same bits as one row per warp on raw bytes (the
// byte maps of docs/formats.md match the kernel's reads). The GPU test runs the real kernels, every staging and knob; this
// one runs where CI runs, with s=0's loads, every family and activation path.
func TestFamiliesOnHost(t *testing.T) {
	cxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("skipping: no g++ to build the host emulation")
	}
	shim, err := filepath.Abs("testdata/hostemu")
	if err != nil {
		t.Fatal(err)
	}
	prelude, _ := kernelFiles.ReadFile(preludeFile)
	dir := t.TempDir()
	for _, name := range FormatNames {
		f := families[name].(*family)
		for _, a := range f.acts {
			bins := map[hostBuild]string{}
			for _, b := range hostBuilds(f.layouts) {
				l := b.l
				p := space.Params{R: b.r, U: 1, S: 1, W: 8, L: l, A: a}
				src, err := f.Source(p)
				if err != nil {
					t.Fatal(err)
				}
				at := strings.Index(src, string(prelude))
				if at < 0 {
					t.Fatalf("%s: the prelude is not in the source", name)
				}
				tag := fmt.Sprintf("%s_r%d_l%d_a%d", name, b.r, l, a)
				defs := filepath.Join(dir, tag+"_defs.h")
				body := filepath.Join(dir, tag+".cu")
				bin := filepath.Join(dir, tag)
				if err := os.WriteFile(defs, []byte(src[:at]), 0o644); err != nil {
					t.Fatal(err)
				}
				code := src[at+len(prelude):]
				if r, ok := hostPTX[name]; ok {
					if !strings.Contains(code, r[0]) {
						t.Fatalf("%s: the PTX the host build replaces is no longer in its kernel file: %s", name, r[0])
					}
					code = strings.ReplaceAll(code, r[0], r[1])
				}
				if strings.Contains(code, "asm(") || strings.Contains(code, "asm volatile") {
					t.Fatalf("%s: its kernel file has PTX the host shim does not replace (hostPTX)", name)
				}
				if err := os.WriteFile(body, []byte(code), 0o644); err != nil {
					t.Fatal(err)
				}
				cmd := exec.Command(cxx, "-O1", "-ffp-contract=off", "-Wno-unknown-pragmas", "-I", shim,
					fmt.Sprintf("-DDEFINES_FILE=%q", defs), fmt.Sprintf("-DFAMILY_FILE=%q", body),
					filepath.Join(shim, "main.cpp"), "-o", bin)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("%s l=%d a=%d: host build: %v\n%s", name, l, a, err, out)
				}
				bins[b] = bin
			}
			for _, sh := range [][2]int{{37, 256}, {67, 2048}, {5, 2304}, {130, 6144}} {
				rows, cols := sh[0], sh[1]
				raw := hostQuantized(t, f.Format(), rows, cols, uint64(rows*cols))
				x := make([]float32, cols)
				rng := rand.New(rand.NewPCG(uint64(cols), 5))
				for i := range x {
					x[i] = float32(rng.Float64()*2 - 1)
				}
				ref, err := f.Format().Reference(raw, x, rows, cols)
				if err != nil {
					t.Fatal(err)
				}
				var first []float32
				for _, b := range hostBuilds(f.layouts) {
					p := space.Params{R: b.r, U: 1, S: 1, W: 8, L: b.l, A: a}
					if f.Gate(p, rows, cols) != nil {
						continue
					}
					w, err := f.Repack(raw, rows, cols, b.l)
					if err != nil {
						t.Fatal(err)
					}
					y := runHost(t, bins[b], rows, cols, w, x)
					if e := RelL2(y, ref); !(e <= f.ErrorBound(p)) {
						t.Errorf("%s %dx%d %s: relative L2 error %.3g > bound %.3g", name, rows, cols, p.ID(), e, f.ErrorBound(p))
					}
					if first == nil {
						first = y
					} else if !bytes.Equal(floatBytes(first), floatBytes(y)) {
						t.Errorf("%s %dx%d: %s differs from r=1 l=0 in its bits", name, rows, cols, p.ID())
					}
				}
			}
		}
	}
}

// hostBuilds are the (layout, rows per warp) pairs the host emulation
// builds: every layout with one row per warp, and the raw one with three
// (rows past the end are zero chunks).
func hostBuilds(layouts []int) []hostBuild {
	var out []hostBuild
	for _, l := range layouts {
		out = append(out, hostBuild{l, 1})
	}
	return append(out, hostBuild{0, 3})
}

// hostBuild is one host binary: a layout and the rows per warp.
type hostBuild struct{ l, r int }

func hostQuantized(t *testing.T, f Format, rows, cols int, seed uint64) []byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 9))
	w := make([]float32, rows*cols)
	for i := range w {
		w[i] = float32(rng.NormFloat64() * 0.05)
		if rng.IntN(300) == 0 {
			w[i] *= 10
		}
	}
	b, err := f.Quantize(w, rows, cols)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func runHost(t *testing.T, bin string, rows, cols int, w []byte, x []float32) []float32 {
	t.Helper()
	var in bytes.Buffer
	binary.Write(&in, binary.LittleEndian, [2]int32{int32(rows), int32(cols)})
	binary.Write(&in, binary.LittleEndian, int64(len(w)))
	in.Write(w)
	binary.Write(&in, binary.LittleEndian, x)
	cmd := exec.Command(bin)
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil || len(out) != 4*rows {
		t.Fatalf("%s: %v (%d bytes out)", bin, err, len(out))
	}
	y := make([]float32, rows)
	for i := range y {
		y[i] = math.Float32frombits(binary.LittleEndian.Uint32(out[4*i:]))
	}
	return y
}

// RelL2 is ||y - ref|| / ||ref||; NaN anywhere gives NaN. (Exported for
// the package's external tests, the GPU test among them.)
func RelL2(y []float32, ref []float64) float64 {
	var num, den float64
	for i, v := range y {
		d := float64(v) - ref[i]
		num += d * d
		den += ref[i] * ref[i]
	}
	return math.Sqrt(num / den)
}

func floatBytes(y []float32) []byte {
	b := make([]byte, 4*len(y))
	for i, v := range y {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}
