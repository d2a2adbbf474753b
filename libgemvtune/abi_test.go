package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemvtune/gemvtune"
	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

// The tests here build libgemvtune (c-shared and c-archive) with the go
// command, compile testdata/abi_check.c against it with the C compiler,
// and ask it, the Python module and the Rust crate over it what they ask
// the Go policy: every answer must be byte-identical. Without a C compiler
// (or python3, or cargo) they skip, except under CI, whose machine has
// all three.

// built is the library and the C check program, built once per test run.
var built struct {
	once                  sync.Once
	dir, lib, check, arch string // arch: abi_check linked with the c-archive
	err                   error
}

func tool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s not found: .ci/run installs it", name)
		}
		t.Skipf("%s not found: the C ABI tests need it", name)
	}
	return p
}

func build(t *testing.T) {
	t.Helper()
	tool(t, "go") // a GPU machine that runs prebuilt test binaries may have none
	tool(t, "cc")
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "libgemvtune-test")
		if err != nil {
			built.err = err
			return
		}
		built.dir = dir
		built.lib = filepath.Join(dir, "libgemvtune.so")
		built.check = filepath.Join(dir, "abi_check")
		built.arch = filepath.Join(dir, "abi_check_static")
		steps := [][]string{
			{"go", "build", "-buildmode=c-shared", "-o", built.lib, "."},
			{"go", "build", "-buildmode=c-archive", "-o", filepath.Join(dir, "libgemvtune.a"), "."},
			{"cc", "-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror", "-I.", "-o", built.check,
				"testdata/abi_check.c", "-L" + dir, "-lgemvtune", "-lpthread", "-Wl,-rpath," + dir},
			{"cc", "-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror", "-I.", "-o", built.arch,
				"testdata/abi_check.c", filepath.Join(dir, "libgemvtune.a"), "-lpthread", "-lm"},
		}
		for _, s := range steps {
			cmd := exec.Command(s[0], s[1:]...)
			cmd.Env = append(os.Environ(), "CGO_CFLAGS=-Wno-deprecated-declarations")
			if out, err := cmd.CombinedOutput(); err != nil {
				built.err = fmt.Errorf("%s: %v\n%s", strings.Join(s, " "), err, out)
				return
			}
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	for _, f := range clientSources {
		if _, err := os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// canonical is one answer in abi_check's form.
func canonical(st int, errText string, format string, c gemvtune.Choice) string {
	b := func(v float64) string { return fmt.Sprintf("%016x", math.Float64bits(v)) }
	i := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	q := c.Params
	cub := "-"
	if len(c.Cubin) > 0 {
		cub = fmt.Sprintf("%x", c.Cubin)
	}
	l := c.Launch
	line := fmt.Sprintf("%d|%s|%s|%s|%s|%s|%d,%d,%d,%d,%d,%d,%d,%d|%d|%s|%s|%d|%s|%d,%d,%d|%d,%d,%d|%d|%d|%d|%d|%s",
		st, errText, c.ID, c.Source, c.Reason, c.Class, q.R, q.F, q.U, q.S, q.W, q.G, q.L, q.A, c.Layout,
		variants.LayoutDescription(format, c.Layout), cub, len(c.Cubin), gemvtune.KernelEntry,
		l.Grid[0], l.Grid[1], l.Grid[2], l.Block[0], l.Block[1], l.Block[2], l.SharedBytes,
		i(c.NeedsSharedOptIn()), i(c.PDL), i(c.PDLPays()), b(c.ErrorBound))
	var e gemvtune.Evidence
	if c.Evidence != nil {
		e = *c.Evidence
	}
	line += fmt.Sprintf("|%d|%s|%s|%s|%s|%s|%s|%s|%s|", i(c.Evidence != nil), b(e.MedianUS), b(e.GBs),
		b(e.PctCeiling), b(e.Speedup), b(e.P), b(e.PDLUS), e.GPUName, e.TunedShape)
	unix := int64(0)
	if !e.Time.IsZero() {
		unix = e.Time.Unix()
	}
	return line + fmt.Sprintf("%d|%d|%d", unix, c.PDLSharedBytes, i(c.PDLNeedsSharedOptIn()))
}

// fixture writes a cache whose records give every source of a choice, and
// a file of cache bytes that are not a cache.
func fixture(t *testing.T) (good, corrupt string) {
	t.Helper()
	hash := func(format string) string {
		f, err := variants.FamilyOf(format)
		if err != nil {
			t.Fatal(err)
		}
		return f.SourceHash()
	}
	rec := func(arch, format string, rows, cols int, id, class string) cache.Record {
		p, err := space.Parse(id)
		if err != nil {
			t.Fatal(err)
		}
		return cache.Record{
			Key:      cache.Key{Arch: arch, Format: format, Rows: rows, Cols: cols},
			WinnerID: id, Params: p, Class: class, Decision: id + ": +9.0 % over v1 (p=0.002, n=20+20)",
			MedianUS: 17.25, LoUS: 17, HiUS: 17.5, GBs: 3890.5, PctCeiling: 87.4, CeilingGBs: 4451, StockMedianUS: 18.8,
			StockGBs: 3570, Speedup: 1.09, P: 0.002, Samples: 20, Registers: 40, BlocksPerSM: 4, PDLUS: 16.5,
			PDLShared: 117 << 10, LaunchPDL: true,
			GPUName: "NVIDIA H200", GPUUUID: "GPU-0f0e", Driver: "580.159", NVRTC: "13.0",
			SourceHash: hash(format), ToolVersion: cache.ToolVersion,
			Time: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC),
		}
	}
	tol := rec("sm_90", "q4_K", 4096, 4096, "r1f0u2s1w16g14l1a1", cache.ClassTolerance)
	tol.Exact = &cache.Alternative{WinnerID: "r2f0u2s0w8l1", Params: space.Params{R: 2, U: 2, W: 8, L: 1},
		Class: cache.ClassExact, Decision: "r2f0u2s0w8l1: +4.0 % over v1 (p=0.01)", MedianUS: 18, GBs: 3700,
		PctCeiling: 83, Speedup: 1.04, P: 0.01}
	slow := rec("sm_90", "q8_0", 1024, 4096, "r1f0u2s1w16g7l1", cache.ClassExact)
	slow.PDLUS, slow.LaunchPDL = 40, false // PDL did not pay here
	stale := rec("sm_90", "q8_0", 14336, 4096, "r2f0u1s0w8", cache.ClassExact)
	h100 := rec("sm_90", "q4_0", 4096, 4096, "r4f0u1s0w8", cache.ClassExact)
	h100.GPUName = "NVIDIA H100 80GB HBM3"
	stale.SourceHash = "0123456789abcdef"
	recs := []cache.Record{
		rec("sm_90", "q4_0", 4096, 4096, "r2f0u2s1w8", cache.ClassExact),
		rec("sm_90", "q4_0", 28672, 4096, "r1f0u4s3w16g14l2a1", cache.ClassTolerance),
		rec("sm_90", "q4_0", 4096, 14336, "r2f0u2s3w16l2a1", cache.ClassTolerance),
		rec("sm_90", "bf16", 4096, 4096, "r4f0u4s0w4", cache.ClassExact),
		rec("sm_80", "q4_0", 4096, 4096, "r2f2u2s0w8", cache.ClassExact),
		tol, slow, stale, h100,
	}
	good = filepath.Join(t.TempDir(), "tune.db")
	db, err := cache.Open(good, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		cub := []byte(fmt.Sprintf("cubin %d of %s %s", i, r.WinnerID, r.Arch))
		var xc []byte
		if r.Exact != nil {
			xc = []byte("exact cubin of " + r.Exact.WinnerID)
		}
		if err := db.Put(r, cub, xc); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	corrupt = filepath.Join(t.TempDir(), "corrupt.db")
	junk := make([]byte, 1<<14)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range junk {
		junk[i] = byte(rng.Uint32())
	}
	if err := os.WriteFile(corrupt, junk, 0o644); err != nil {
		t.Fatal(err)
	}
	return good, corrupt
}

// queries walk every source with the fixture: tuned, nearest (other rows,
// g adapted), default, stale, untuned-arch, and invalid lookups.
var queries = []struct {
	arch, gpu, format string
	rows, cols        int
}{
	{"sm_90", "NVIDIA H200", "q4_0", 4096, 4096},
	{"sm_90", "NVIDIA H100 80GB HBM3", "q4_0", 4096, 4096},
	{"sm_90", "NVIDIA H20", "q4_0", 4096, 4096},
	{"sm_90", "-", "q4_0", 4096, 4096},
	{"sm_90", "NVIDIA H20", "q4_0", 1024, 4096},
	{"sm_90", "NVIDIA H200", "q4_0", 6144, 4096},
	{"sm_90", "NVIDIA H200", "q4_0", 28672, 4096},
	{"sm_90", "NVIDIA H200", "q4_0", 14336, 4096},
	{"sm_90", "NVIDIA H200", "q4_0", 4096, 14336},
	{"sm_90", "NVIDIA H200", "q4_0", 1024, 4096},
	{"sm_90", "NVIDIA H200", "q4_K", 4096, 4096},
	{"sm_90", "NVIDIA H200", "q4_K", 6144, 4096},
	{"sm_90", "NVIDIA H200", "q8_0", 1024, 4096},
	{"sm_90", "NVIDIA H200", "q8_0", 14336, 4096},
	{"sm_90", "NVIDIA H200", "q8_0", 4096, 4096},
	{"sm_90", "NVIDIA H200", "bf16", 4096, 4096},
	{"sm_90", "NVIDIA H200", "affine4", 4096, 4096},
	{"sm_80", "NVIDIA H200", "q4_0", 4096, 4096},
	{"sm_80", "NVIDIA H200", "q4_0", 4096, 14336},
	{"sm_86", "NVIDIA H200", "q4_0", 4096, 4096},
	{"sm_90", "NVIDIA H200", "q4_0", 64, 32},
	{"sm_90", "NVIDIA H200", "q4_0", 0, 4096},
	{"sm_90", "NVIDIA H200", "q4_0", 4096, -4096},
	{"sm_90", "NVIDIA H200", "q4_0", 4096, 4100},
	{"sm_90", "NVIDIA H200", "q3_K", 4096, 4096},
	{"sm90", "NVIDIA H200", "q4_0", 4096, 4096},
	{"sm_90", "NVIDIA H200", "bf16", 3, 1},
}

// envCase is one environment an engine starts in.
type envCase struct {
	name  string
	path  string // cache path argument: "good", "corrupt", "missing" or "" (NULL)
	flags uint32
	env   map[string]string
}

func envCases() []envCase {
	cont := uint32(1)
	return []envCase{
		{"plain", "good", cont, nil},
		{"plain strict", "good", 0, nil},
		{"cache from GEMV_TUNE_CACHE", "", cont, map[string]string{"GEMV_TUNE_CACHE": "good"}},
		{"no cache", "missing", cont, nil},
		{"no cache strict", "missing", 0, nil},
		{"corrupt cache", "corrupt", cont, nil},
		{"corrupt cache strict", "corrupt", 0, nil},
		{"disabled", "good", cont, map[string]string{"GEMV_TUNE_DISABLE": "1"}},
		{"rollback", "good", cont, map[string]string{"GEMV_FORCE_VARIANT": "v1"}},
		{"forced", "good", cont, map[string]string{"GEMV_FORCE_VARIANT": "r2f0u2s1w16"}},
		{"forced layout", "good", cont, map[string]string{"GEMV_FORCE_VARIANT": "r1f0u2s0w8l1"}},
		{"forced per format", "good", cont, map[string]string{"GEMV_FORCE_VARIANT": "v1", "GEMV_FORCE_VARIANT_Q4_0": "r4f0u1s0w4"}},
		{"forced q8_0 q4_K affine4 bf16", "good", cont, map[string]string{"GEMV_FORCE_VARIANT_Q8_0": "r2f0u1s0w8",
			"GEMV_FORCE_VARIANT_Q4_K": "r1f0u1s1w8a1", "GEMV_FORCE_VARIANT_AFFINE4": "r1f0u1s0w8l1", "GEMV_FORCE_VARIANT_BF16": "r8f0u1s0w8"}},
		{"knobs", "good", cont, map[string]string{"GEMV_ROWS_PER_WARP": "2", "GEMV_MIN_BLOCKS": "2", "GEMV_UNROLL": "4",
			"GEMV_SMEM_STAGING": "1", "GEMV_WARPS": "4"}},
		{"knob on forced", "good", cont, map[string]string{"GEMV_FORCE_VARIANT": "r1f0u1s0w8", "GEMV_WARPS": "16"}},
		{"require exact", "good", cont, map[string]string{"GEMV_REQUIRE_EXACT": "1"}},
		{"require same model", "good", cont, map[string]string{"GEMV_REQUIRE_SAME_MODEL": "1"}},
		{"require exact forced", "good", cont, map[string]string{"GEMV_REQUIRE_EXACT": "1", "GEMV_FORCE_VARIANT": "r1f0u1s1w8a1"}},
		{"invalid unroll", "good", cont, map[string]string{"GEMV_UNROLL": "3"}},
		{"invalid force", "good", cont, map[string]string{"GEMV_FORCE_VARIANT_Q4_K": "fast"}},
		{"invalid disable", "good", cont, map[string]string{"GEMV_TUNE_DISABLE": "yes"}},
		{"disabled beats invalid values", "good", cont, map[string]string{"GEMV_TUNE_DISABLE": "1", "GEMV_UNROLL": "3"}},
		{"misspelt names", "good", cont, map[string]string{"GEMV_FORCE_VARIANT_Q40": "v1", "GEMV_UNROL": "2"}},
		{"empty values", "good", cont, map[string]string{"GEMV_FORCE_VARIANT": "", "GEMV_UNROLL": "", "GEMV_TUNE_DISABLE": ""}},
	}
}

// resolve turns the case's path names into files.
func (c envCase) resolve(good, corrupt, missing string) (path string, env map[string]string) {
	name := map[string]string{"good": good, "corrupt": corrupt, "missing": missing, "": ""}
	env = map[string]string{}
	for k, v := range c.env {
		if p, ok := name[v]; ok && k == gemvtune.EnvTuneCache {
			v = p
		}
		env[k] = v
	}
	return name[c.path], env
}

// expected is what the Go policy answers for the case, in the canonical form.
func expected(path string, flags uint32, env map[string]string) string {
	var b strings.Builder
	pol, err := gemvtune.Open(&gemvtune.Options{CachePath: path, ContinueOnCacheError: flags&1 != 0,
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Environ:   func() []string { return environOf(env) }})
	if err != nil {
		fmt.Fprintf(&b, "open|%d|%s|null\n", statusOf(openError{err}), err)
		return b.String()
	}
	ce := "-"
	if pol.CacheErr != nil {
		ce = pol.CacheErr.Error()
	}
	fmt.Fprintf(&b, "open|0|%s|%s\n", pol.CachePath, ce)
	for _, w := range pol.Warnings {
		fmt.Fprintf(&b, "warning|%s\n", w)
	}
	for _, q := range queries {
		gpu := strings.ReplaceAll(q.gpu, "_", " ")
		if gpu == "-" {
			gpu = ""
		}
		c, err := pol.LookupGPU(q.arch, gpu, q.format, q.rows, q.cols)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		b.WriteString(canonical(int(statusOf(err)), msg, q.format, c) + "\n")
	}
	return b.String()
}

func writeQueries(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, q := range queries {
		fmt.Fprintf(&b, "%s %s %s %d %d\n", q.arch, strings.ReplaceAll(q.gpu, " ", "_"), q.format, q.rows, q.cols)
	}
	p := filepath.Join(t.TempDir(), "queries.txt")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// environOf is env as NAME=VALUE, with the variables childEnv adds.
func environOf(env map[string]string) []string {
	out := []string{"PATH=", "HOME=", "XDG_CACHE_HOME="}
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// childEnv is the whole environment of a client process: the case's
// variables and nothing else of GEMV_*, and a HOME of its own.
func childEnv(t *testing.T, env map[string]string) []string {
	out := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_CACHE_HOME=" + t.TempDir()}
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// clients are the programs that answer lookups over the C ABI.
func clients(t *testing.T) map[string][]string {
	build(t)
	c := map[string][]string{
		"C (shared)":  {built.check, "lookup"},
		"C (archive)": {built.arch, "lookup"},
	}
	if py := python(t); py != "" {
		c["Python"] = []string{py, "../bindings/python/abi_driver.py", built.lib, "lookup"}
	}
	if rs := rustDriver(t); rs != "" {
		c["Rust"] = []string{rs, "lookup"}
	}
	return c
}

// kernelClients are the programs that answer the kernel questions
// (source, launch, repack, reference) as abi_check does: it, and the
// Python module through abi_driver.py.
func kernelClients(t *testing.T) map[string][]string {
	build(t)
	c := map[string][]string{"C": {built.check}}
	if py := python(t); py != "" {
		c["Python"] = []string{py, "../bindings/python/abi_driver.py", built.lib}
	}
	if rs := rustDriver(t); rs != "" {
		c["Rust"] = []string{rs}
	}
	return c
}

// python is python3's path, or "" where it is missing (outside CI, which
// installs it).
func python(t *testing.T) string {
	py, err := exec.LookPath("python3")
	if err != nil && os.Getenv("CI") != "" {
		t.Fatal("python3 not found: .ci/run installs it")
	}
	return py
}

// rust holds the Rust programs the tests run, built once per test run
// with cargo into one target folder.
var rust struct {
	once           sync.Once
	driver, engine string
	err            error
}

// cargo is cargo's path, or "" where it is missing (outside CI, whose
// machine has Rust).
func cargo(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("cargo")
	if err != nil && os.Getenv("CI") != "" {
		t.Fatal("cargo not found: CI's machine has Rust (.ci/run puts ~/.cargo/bin on PATH)")
	}
	return p
}

// cargoIn runs cargo with args on the crate at manifest, against the
// library build made, offline (the crates have no dependencies but
// each other), in the tests' target folder, with no GEMV* variable of
// this process.
func cargoIn(manifest string, args ...string) ([]byte, error) {
	args = append(args, "--offline", "--quiet", "--manifest-path", manifest, "--target-dir", filepath.Join(built.dir, "rust"))
	cmd := exec.Command("cargo", args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GEMV") { // the tests' policies read only what they set
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "GEMVTUNE_LIB_DIR="+built.dir)
	return cmd.CombinedOutput()
}

// rustBuilt builds bindings/rust's abi_driver example and
// examples/rust-engine, and returns their paths; "" and "" where cargo is
// missing.
func rustBuilt(t *testing.T) (driver, engine string) {
	t.Helper()
	if cargo(t) == "" {
		return "", ""
	}
	build(t)
	rust.once.Do(func() {
		for _, c := range [][]string{
			{"../bindings/rust/Cargo.toml", "build", "--examples"},
			{"../examples/rust-engine/Cargo.toml", "build"},
		} {
			if out, err := cargoIn(c[0], c[1:]...); err != nil {
				rust.err = fmt.Errorf("cargo %v on %s: %v\n%s", c[1:], c[0], err, out)
				return
			}
		}
		target := filepath.Join(built.dir, "rust", "debug")
		rust.driver = filepath.Join(target, "examples", "abi_driver")
		rust.engine = filepath.Join(target, "rust-engine")
	})
	if rust.err != nil {
		t.Fatal(rust.err)
	}
	return rust.driver, rust.engine
}

// rustDriver is the Rust crate's test driver, or "" where cargo is missing.
func rustDriver(t *testing.T) string {
	d, _ := rustBuilt(t)
	return d
}

// clientSources are the files the tests' child processes read: go test
// caches a result by the files the test itself opens, so build reads them
// too, and a change to one runs the tests again.
var clientSources = []string{
	"testdata/abi_check.c", "../bindings/python/gemvtune.py", "../bindings/python/abi_driver.py",
	"../examples/python-engine/engine.py", "../bindings/rust/Cargo.toml", "../bindings/rust/build.rs",
	"../bindings/rust/src/lib.rs", "../bindings/rust/src/sys.rs", "../bindings/rust/examples/abi_driver.rs",
	"../examples/rust-engine/Cargo.toml", "../examples/rust-engine/build.rs", "../examples/rust-engine/src/main.rs",
	"../examples/rust-engine/src/cuda.rs", "../examples/rust-engine/src/weights.rs",
}

// run runs a client with args, failing the test on an error.
func run(t *testing.T, argv []string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(argv[0], append(argv[1:], args...)...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v %v: %v\n%s", argv, args, err, out)
	}
	return string(out)
}

// TestLookupsMatchGo asks every client the query table in every
// environment case and compares each answer with the Go policy's.
func TestLookupsMatchGo(t *testing.T) {
	good, corrupt := fixture(t)
	missing := filepath.Join(t.TempDir(), "missing.db")
	qs := writeQueries(t)
	for name, argv := range clients(t) {
		for _, ec := range envCases() {
			t.Run(name+"/"+ec.name, func(t *testing.T) {
				path, env := ec.resolve(good, corrupt, missing)
				want := expected(path, ec.flags, env)
				arg := path
				if arg == "" {
					arg = "-"
				}
				cmd := exec.Command(argv[0], append(argv[1:], arg, fmt.Sprint(ec.flags), qs)...)
				cmd.Env = childEnv(t, env)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				got, err := cmd.Output()
				if err != nil {
					t.Fatalf("%v: %v\n%s", argv, err, stderr.String())
				}
				compareLines(t, string(got), want)
			})
		}
	}
}

func compareLines(t *testing.T, got, want string) {
	t.Helper()
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, gl, wl)
		}
	}
}

// TestCoversEverySource checks that the table reaches every source of a
// choice and every return code a lookup can give, so that the comparison
// cannot pass on a table that misses a kind.
func TestCoversEverySource(t *testing.T) {
	good, corrupt := fixture(t)
	missing := filepath.Join(t.TempDir(), "missing.db")
	seen := map[string]bool{}
	codes := map[int]bool{}
	for _, ec := range envCases() {
		path, env := ec.resolve(good, corrupt, missing)
		for _, line := range strings.Split(strings.TrimSpace(expected(path, ec.flags, env)), "\n") {
			f := strings.Split(line, "|")
			if f[0] == "warning" {
				continue
			}
			if f[0] == "open" {
				var st int
				fmt.Sscan(f[1], &st)
				codes[st] = true
				continue
			}
			var st int
			fmt.Sscan(f[0], &st)
			codes[st] = true
			seen[f[3]] = true
		}
	}
	for _, s := range []string{gemvtune.SourceTuned, gemvtune.SourceNearest, gemvtune.SourceOtherModel, gemvtune.SourceForced,
		gemvtune.SourceForcedGateFailed, gemvtune.SourceDefault, gemvtune.SourceStale, gemvtune.SourceUntunedArch,
		gemvtune.SourceNoCache, gemvtune.SourceCorruptCache, gemvtune.SourceDisabled} {
		if !seen[s] {
			t.Errorf("no case gives source %q", s)
		}
	}
	for _, c := range []int{0, 2, 3, 4, 5, 6} {
		if !codes[c] {
			t.Errorf("no case gives status %d", c)
		}
	}
}

// TestThreads runs the lookups from eight C threads at once.
func TestThreads(t *testing.T) {
	build(t)
	good, _ := fixture(t)
	cmd := exec.Command(built.check, "threads", good, "1", writeQueries(t))
	cmd.Env = childEnv(t, nil)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	open, rest, _ := strings.Cut(string(out), "\n")
	summary, rest, _ := strings.Cut(rest, "\n")
	if !strings.Contains(summary, "differing 0") {
		t.Fatal(summary)
	}
	compareLines(t, open+"\n"+rest, expected(good, 1, nil))
}

// TestHostileCalls: NULLs, unknown names, zero and huge shapes, short
// buffers and unknown flags are each an error with a message.
func TestHostileCalls(t *testing.T) {
	build(t)
	for _, bin := range []string{built.check, built.arch} {
		cmd := exec.Command(bin, "hostile")
		cmd.Env = childEnv(t, nil)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), ", 0 failed") {
			t.Fatalf("%s: %v\n%s", bin, err, out)
		}
	}
}

// TestSourceMatchesGo: the source, its name and options are gemvtune.Source's.
func TestSourceMatchesGo(t *testing.T) {
	build(t)
	for _, c := range []struct{ arch, format, id string }{
		{"sm_90", "q4_0", "v1"}, {"sm_90", "q4_0", "r1f0u4s3w16g14l2a1"}, {"sm_80", "q4_K", "r2f0u2s1w8l1a1"},
		{"sm_75", "bf16", "r4f0u4s0w4"}, {"sm_90", "affine4", "r1f0u2s2w8l1"}, {"sm_90", "q8_0", "r1f0u2s1w16g7l1"},
	} {
		ks, err := gemvtune.Source(c.arch, c.format, c.id)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("0|%s|%s|%d|%s\n%s", ks.Name, ks.Entry, len(ks.Options), strings.Join(ks.Options, "|"), ks.Code)
		for name, argv := range kernelClients(t) {
			out := run(t, argv, childEnv(t, map[string]string{"GEMV_TUNE_DISABLE": "1"}), "source", c.arch, c.format, c.id)
			if out != want {
				t.Errorf("%s %v: source differs from gemvtune.Source (%d vs %d bytes)", name, c, len(out), len(want))
			}
		}
	}
	for name, argv := range kernelClients(t) {
		out := run(t, argv, childEnv(t, nil), "source", "sm_90", "q9", "v1")
		if !strings.HasPrefix(out, fmt.Sprintf("%d|", statusOf(variants.ErrUnknownFormat))) || strings.Count(out, "\n") != 1 {
			t.Errorf("%s: source of an unknown format: %q; want its status and one line", name, out)
		}
	}
}

// TestLaunchMatchesGo: gemvtune_launch gives gemvtune.LaunchOf's geometry
// or its error.
func TestLaunchMatchesGo(t *testing.T) {
	build(t)
	for _, c := range []struct {
		format, id string
		rows, cols int
	}{
		{"q4_0", "v1", 4096, 4096}, {"q4_0", "r1f0u4s3w16g14l2a1", 28672, 8192}, {"q4_K", "r2f0u2s1w8l1a1", 4096, 14336},
		{"bf16", "r4f0u4s0w4", 128256, 4096}, {"q8_0", "r1f0u2s2w16g7l1", 1024, 4096}, {"q4_0", "r1f0u4s3w16", 64, 32},
		{"q4_0", "v1", 0, 32}, {"q9", "v1", 1, 32}, {"q4_0", "x", 1, 32},
	} {
		want := ""
		l, err := gemvtune.LaunchOf(c.format, c.id, c.rows, c.cols)
		if err != nil {
			want = fmt.Sprintf("%d|%s\n", statusOf(err), err)
		} else {
			want = fmt.Sprintf("0|%d,%d,%d|%d,%d,%d|%d\n", l.Grid[0], l.Grid[1], l.Grid[2], l.Block[0], l.Block[1], l.Block[2], l.SharedBytes)
		}
		for name, argv := range kernelClients(t) {
			out := run(t, argv, childEnv(t, nil), "launch", c.format, c.id, fmt.Sprint(c.rows), fmt.Sprint(c.cols))
			if out != want {
				t.Errorf("%s %v: got %q, want %q", name, c, out, want)
			}
		}
	}
}

// quantizedRandom is the raw bytes of fam's format for normal random
// weights.
func quantizedRandom(t *testing.T, rng *rand.Rand, fam variants.Family, rows, cols int) []byte {
	t.Helper()
	w := make([]float32, rows*cols)
	for i := range w {
		w[i] = float32(rng.NormFloat64())
	}
	raw, err := fam.Format().Quantize(w, rows, cols)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestRepackMatchesGo repacks quantized random weights of every format
// into every layout through the ABI and compares with gemvtune.Repack.
func TestRepackMatchesGo(t *testing.T) {
	build(t)
	rng := rand.New(rand.NewPCG(7, 9))
	dir := t.TempDir()
	for _, fam := range variants.Families() {
		format := fam.Format().Name()
		rows, cols := 24, 4096
		raw := quantizedRandom(t, rng, fam, rows, cols)
		in := filepath.Join(dir, format+".raw")
		if err := os.WriteFile(in, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, l := range fam.Layouts() {
			want, err := gemvtune.Repack(format, l, raw, rows, cols)
			if err != nil {
				t.Fatal(err)
			}
			for name, argv := range kernelClients(t) {
				out := filepath.Join(dir, fmt.Sprintf("%s.l%d", format, l))
				run(t, argv, childEnv(t, nil), "repack", format, fmt.Sprint(l), fmt.Sprint(rows), fmt.Sprint(cols), in, out)
				got, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s %s l=%d: repacked bytes differ from gemvtune.Repack", name, format, l)
				}
				if l != 0 && bytes.Equal(got, raw) {
					t.Errorf("%s %s l=%d: the repack left the raw bytes as they were: the check cannot tell", name, format, l)
				}
			}
		}
	}
}

// TestReferenceMatchesGo: gemvtune_reference's float64s, through C,
// Python and Rust, are gemvtune.Reference's bit for bit, for every format.
func TestReferenceMatchesGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	dir := t.TempDir()
	for _, fam := range variants.Families() {
		format := fam.Format().Name()
		rows, cols := 7, 512
		raw := quantizedRandom(t, rng, fam, rows, cols)
		x := make([]float32, cols)
		xb := make([]byte, 0, 4*cols)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
			xb = binary.LittleEndian.AppendUint32(xb, math.Float32bits(x[i]))
		}
		ref, err := gemvtune.Reference(format, raw, x, rows, cols)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]byte, 0, 8*rows)
		for _, v := range ref {
			want = binary.LittleEndian.AppendUint64(want, math.Float64bits(v))
		}
		in, xin := filepath.Join(dir, format+".raw"), filepath.Join(dir, format+".x")
		if err := os.WriteFile(in, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(xin, xb, 0o644); err != nil {
			t.Fatal(err)
		}
		for name, argv := range kernelClients(t) {
			out := filepath.Join(dir, format+"."+name+".y")
			run(t, argv, childEnv(t, nil), "reference", format, fmt.Sprint(rows), fmt.Sprint(cols), in, xin, out)
			got, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s %s: reference differs from gemvtune.Reference", name, format)
			}
		}
	}
}

// TestHeaderDeclaresEveryExport compares the functions gemvtune.h declares
// with the symbols the shared library exports (the prototypes themselves
// are checked by the C compiler: main.go includes gemvtune.h before cgo's
// declarations of the exports).
func TestHeaderDeclaresEveryExport(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the ELF symbol table")
	}
	build(t)
	hdr, err := os.ReadFile("gemvtune.h")
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	for _, line := range strings.Split(string(hdr), "\n") {
		if i := strings.Index(line, " gemvtune_"); i >= 0 && !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "typedef") &&
			!strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "}") {
			name := line[i+1:]
			if j := strings.Index(name, "("); j > 0 {
				declared[name[:j]] = true
			}
		}
	}
	nm := tool(t, "nm")
	out, err := exec.Command(nm, "-D", "--defined-only", built.lib).Output()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[1] == "T" && strings.HasPrefix(f[2], "gemvtune_") {
			exported[f[2]] = true
		}
	}
	for name := range declared {
		if !exported[name] {
			t.Errorf("gemvtune.h declares %s, the library does not export it", name)
		}
	}
	for name := range exported {
		if !declared[name] {
			t.Errorf("the library exports %s, gemvtune.h does not declare it", name)
		}
	}
	if len(declared) < 10 {
		t.Errorf("found only %d declarations in gemvtune.h: %v", len(declared), declared)
	}
}
