// Command libgemvtune is the C ABI of package gemvtune, built with
//
//	go build -buildmode=c-shared -o libgemvtune.so ./libgemvtune
//	go build -buildmode=c-archive -o libgemvtune.a ./libgemvtune
//
// gemvtune.h beside this file is the interface, written for people;
// TestHeaderMatchesExports checks it against what cgo exports. Every
// function here is a thin wrapper over the Go policy (gemvtune.Open,
// Policy.Lookup, gemvtune.Source, gemvtune.Repack, gemvtune.Reference): the
// rules live there alone. This is the only package of the module that
// uses cgo for its own code.
package main

/*
#include <stdlib.h>
#include <string.h>
#include "gemvtune.h"

// The handle behind gemvtune_policy*: a runtime/cgo.Handle of the Go
// policy, kept in C memory so that C holds no Go pointer.
struct gemvtune_policy { uintptr_t handle; };

// const-qualified spellings of gemvtune.h's parameter types, so that the
// prototypes cgo writes for the exports below are exactly the header's:
// including gemvtune.h above makes the C compiler check every one.
typedef const char* gt_cstr;
typedef const void* gt_cbytes;
typedef const float* gt_cfloats;

static const char* gemvtune_getenv(const char* name) { return getenv(name); }

extern char** environ;
static const char* gemvtune_environ(size_t i) { return environ[i]; }
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime/cgo"
	"strings"
	"sync"
	"unsafe"

	"github.com/gemvtune/gemvtune"
	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

func main() {}

// abiVersion is GEMVTUNE_ABI_VERSION of the header this library was
// built with.
const abiVersion = C.GEMVTUNE_ABI_VERSION

var versionString = C.gt_cstr(C.CString(fmt.Sprintf("gemvtune %s (abi %d.%d)", cache.ToolVersion,
	C.GEMVTUNE_ABI_MAJOR, C.GEMVTUNE_ABI_MINOR)))

//export gemvtune_version
func gemvtune_version() C.gt_cstr { return versionString }

//export gemvtune_abi_version
func gemvtune_abi_version() C.int32_t { return abiVersion }

// policy is what a handle holds: the Go policy and the C copies of what
// it returned, each made once and freed at close.
type policy struct {
	pol *gemvtune.Policy

	mu      sync.Mutex
	strs    map[string]*C.char
	cubins  map[*byte]*C.uint8_t
	sources map[[3]string]*C.gemvtune_kernel_source
	allocs  []unsafe.Pointer // everything above, for close
}

func (p *policy) cstr(s string) *C.char {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.strs[s]; ok {
		return c
	}
	c := C.CString(s)
	p.strs[s] = c
	p.allocs = append(p.allocs, unsafe.Pointer(c))
	return c
}

// cubin returns the C copy of a cubin the policy returned; lookups share
// the Go slice of one stored cubin, so it is copied once.
func (p *policy) cubin(b []byte) *C.uint8_t {
	if len(b) == 0 {
		return nil
	}
	key := unsafe.SliceData(b)
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.cubins[key]; ok {
		return c
	}
	c := (*C.uint8_t)(C.CBytes(b))
	p.cubins[key] = c
	p.allocs = append(p.allocs, unsafe.Pointer(c))
	return c
}

func policyOf(h *C.gemvtune_policy) (*policy, error) {
	if h == nil {
		return nil, argErr("the policy handle is NULL")
	}
	p, ok := cgo.Handle(h.handle).Value().(*policy)
	if !ok {
		return nil, argErr("not a policy handle")
	}
	return p, nil
}

// errArgument marks a NULL pointer or a struct of the wrong size.
var errArgument = errors.New("invalid argument")

func argErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errArgument, fmt.Sprintf(format, a...))
}

// statusOf maps an error to its return code.
func statusOf(err error) C.gemvtune_status {
	switch {
	case err == nil:
		return C.GEMVTUNE_OK
	case errors.Is(err, errArgument):
		return C.GEMVTUNE_ERR_ARGUMENT
	case errors.Is(err, gemvtune.ErrInvalidEnv):
		return C.GEMVTUNE_ERR_ENV
	case errors.Is(err, variants.ErrUnknownFormat):
		return C.GEMVTUNE_ERR_FORMAT
	case errors.Is(err, space.ErrBadArch):
		return C.GEMVTUNE_ERR_ARCH
	case errors.Is(err, space.ErrBadID):
		return C.GEMVTUNE_ERR_VARIANT
	case errors.Is(err, variants.ErrBuffer):
		return C.GEMVTUNE_ERR_BUFFER
	case errors.Is(err, space.ErrBadShape), errors.Is(err, variants.ErrShape):
		return C.GEMVTUNE_ERR_SHAPE
	case errors.Is(err, errCache):
		return C.GEMVTUNE_ERR_CACHE
	}
	return C.GEMVTUNE_ERR_INTERNAL
}

// errCache marks an error of Open that is not the environment's: the
// cache was missing or unreadable.
var errCache = errors.New("tuning cache")

// openError is an error of gemvtune.Open, with its text unchanged.
type openError struct{ err error }

func (e openError) Error() string { return e.err.Error() }
func (e openError) Unwrap() []error {
	if errors.Is(e.err, gemvtune.ErrInvalidEnv) {
		return []error{e.err}
	}
	return []error{e.err, errCache}
}

// finish writes err's message to errbuf and returns its code; it also
// turns a panic of the call into GEMVTUNE_ERR_INTERNAL, so that none
// crosses into C. Use as: defer func() { st = finish(recover(), err, ...) }().
func finish(rec any, err error, errbuf *C.char, errlen C.size_t) C.gemvtune_status {
	if rec != nil {
		err = fmt.Errorf("internal error in libgemvtune: %v", rec)
	}
	writeErr(err, errbuf, errlen)
	if rec != nil {
		return C.GEMVTUNE_ERR_INTERNAL
	}
	return statusOf(err)
}

func writeErr(err error, errbuf *C.char, errlen C.size_t) {
	if errbuf == nil || errlen == 0 {
		return
	}
	buf := unsafe.Slice((*byte)(unsafe.Pointer(errbuf)), int(min(errlen, 1<<20)))
	msg := ""
	if err != nil {
		msg = strings.ReplaceAll(err.Error(), "\n", " ")
	}
	n := copy(buf[:len(buf)-1], msg)
	buf[n] = 0
}

// outStruct checks a struct the caller passes for the library to fill: not
// NULL, and its size field (read by size) at least the library's sizeof.
func outStruct(name string, isNil bool, size func() C.uint32_t, want uintptr) error {
	if isNil {
		return argErr("out (%s*) is NULL", name)
	}
	if got := size(); uintptr(got) < want {
		return argErr("%s.size is %d, want at least %d, the sizeof(%s) of the header it was built with", name, uint32(got), want, name)
	}
	return nil
}

// goString reads a C string argument; NULL is an error naming what.
func goString(s C.gt_cstr, what string) (string, error) {
	if s == nil {
		return "", argErr("%s is NULL", what)
	}
	return C.GoString((*C.char)(s)), nil
}

// lookupEnv reads the process environment as it is now (not the copy Go
// took when the library was loaded), so an engine that sets a variable
// before gemvtune_open is heard.
func lookupEnv(name string) (string, bool) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	v := C.gemvtune_getenv(cname)
	if v == nil {
		return "", false
	}
	return C.GoString((*C.char)(unsafe.Pointer(v))), true
}

// cEnviron is the process environment as it is now.
func cEnviron() []string {
	var out []string
	for i := C.size_t(0); ; i++ {
		e := C.gemvtune_environ(i)
		if e == nil {
			return out
		}
		out = append(out, C.GoString((*C.char)(unsafe.Pointer(e))))
	}
}

//export gemvtune_warning_count
func gemvtune_warning_count(h *C.gemvtune_policy) (n C.size_t) {
	defer func() {
		if recover() != nil {
			n = 0
		}
	}()
	p, err := policyOf(h)
	if err != nil {
		return 0
	}
	return C.size_t(len(p.pol.Warnings))
}

//export gemvtune_warning
func gemvtune_warning(h *C.gemvtune_policy, i C.size_t) (s C.gt_cstr) {
	defer func() {
		if recover() != nil {
			s = nil
		}
	}()
	p, err := policyOf(h)
	if err != nil || int(i) >= len(p.pol.Warnings) {
		return nil
	}
	return C.gt_cstr(p.cstr(p.pol.Warnings[i]))
}

//export gemvtune_open
func gemvtune_open(path C.gt_cstr, flags C.uint32_t, out **C.gemvtune_policy, errbuf *C.char, errlen C.size_t) (st C.gemvtune_status) {
	var err error
	defer func() { st = finish(recover(), err, errbuf, errlen) }()
	if out == nil {
		err = argErr("out (gemvtune_policy**) is NULL")
		return
	}
	*out = nil
	if flags&^C.GEMVTUNE_OPEN_CONTINUE_ON_CACHE_ERROR != 0 {
		err = argErr("flags %#x: accepted GEMVTUNE_OPEN_CONTINUE_ON_CACHE_ERROR (1) or 0", uint32(flags))
		return
	}
	opts := &gemvtune.Options{LookupEnv: lookupEnv, Environ: cEnviron,
		ContinueOnCacheError: flags&C.GEMVTUNE_OPEN_CONTINUE_ON_CACHE_ERROR != 0}
	if path != nil {
		opts.CachePath = C.GoString((*C.char)(path))
	}
	pol, oerr := gemvtune.Open(opts)
	if oerr != nil {
		err = openError{oerr}
		return
	}
	p := &policy{pol: pol, strs: map[string]*C.char{}, cubins: map[*byte]*C.uint8_t{},
		sources: map[[3]string]*C.gemvtune_kernel_source{}}
	h := (*C.gemvtune_policy)(C.malloc(C.size_t(unsafe.Sizeof(C.gemvtune_policy{}))))
	h.handle = C.uintptr_t(cgo.NewHandle(p))
	*out = h
	return
}

//export gemvtune_close
func gemvtune_close(h *C.gemvtune_policy) {
	defer func() { _ = recover() }()
	if h == nil {
		return
	}
	hd := cgo.Handle(h.handle)
	if p, ok := hd.Value().(*policy); ok {
		p.mu.Lock()
		for _, a := range p.allocs {
			C.free(a)
		}
		p.allocs, p.strs, p.cubins, p.sources = nil, nil, nil, nil
		p.mu.Unlock()
	}
	hd.Delete()
	C.free(unsafe.Pointer(h))
}

//export gemvtune_cache_path
func gemvtune_cache_path(h *C.gemvtune_policy) (s C.gt_cstr) {
	defer func() {
		if recover() != nil {
			s = nil
		}
	}()
	p, err := policyOf(h)
	if err != nil {
		return nil
	}
	return C.gt_cstr(p.cstr(p.pol.CachePath))
}

//export gemvtune_cache_error
func gemvtune_cache_error(h *C.gemvtune_policy) (s C.gt_cstr) {
	defer func() {
		if recover() != nil {
			s = nil
		}
	}()
	p, err := policyOf(h)
	if err != nil || p.pol.CacheErr == nil {
		return nil
	}
	return C.gt_cstr(p.cstr(p.pol.CacheErr.Error()))
}

// dim checks a rows or cols argument.
func dim(v C.int64_t, what string) (int, error) {
	if v < 1 || v > space.MaxDim {
		return 0, fmt.Errorf("%w: %s %d: accepted 1 to %d", space.ErrBadShape, what, int64(v), space.MaxDim)
	}
	return int(v), nil
}

//export gemvtune_lookup
func gemvtune_lookup(h *C.gemvtune_policy, arch, gpu, format C.gt_cstr, rows, cols C.int64_t, out *C.gemvtune_choice,
	errbuf *C.char, errlen C.size_t) (st C.gemvtune_status) {
	var err error
	defer func() { st = finish(recover(), err, errbuf, errlen) }()
	var p *policy
	if p, err = policyOf(h); err != nil {
		return
	}
	if err = outStruct("gemvtune_choice", out == nil, func() C.uint32_t { return out.size }, C.GEMVTUNE_CHOICE_SIZE_1_0); err != nil {
		return
	}
	var a, f string
	if a, err = goString(arch, "arch"); err != nil {
		return
	}
	if f, err = goString(format, "format"); err != nil {
		return
	}
	var g string
	if gpu != nil {
		g = C.GoString((*C.char)(gpu))
	}
	ch, lerr := p.pol.LookupGPU(a, g, f, int(rows), int(cols)) // int is 64 bits wherever cgo builds this
	// A caller built against an older minor version passes a smaller
	// struct: it gets the fields it knows.
	var full C.gemvtune_choice
	full.size = out.size
	p.fill(&full, f, ch)
	C.memcpy(unsafe.Pointer(out), unsafe.Pointer(&full), C.size_t(min(uintptr(out.size), unsafe.Sizeof(full))))
	err = lerr
	return
}

// fill copies ch into out, the strings and the cubin owned by p.
func (p *policy) fill(out *C.gemvtune_choice, format string, ch gemvtune.Choice) {
	size := out.size
	*out = C.gemvtune_choice{size: size}
	out.id = p.cstr(ch.ID)
	out.source = p.cstr(ch.Source)
	out.reason = p.cstr(ch.Reason)
	out.class_name = p.cstr(ch.Class)
	// gemvtune_params holds the knobs in space.Knobs order (TestKnobLists).
	knobs := unsafe.Slice((*C.int32_t)(unsafe.Pointer(&out.params)), unsafe.Sizeof(out.params)/unsafe.Sizeof(C.int32_t(0)))
	for i, k := range space.Knobs {
		knobs[i] = C.int32_t(k.Of(ch.Params))
	}
	out.layout = C.int32_t(ch.Layout)
	out.layout_name = p.cstr(variants.LayoutDescription(format, ch.Layout))
	out.cubin = p.cubin(ch.Cubin)
	out.cubin_len = C.size_t(len(ch.Cubin))
	out.entry = p.cstr(gemvtune.KernelEntry)
	for i := range 3 {
		out.grid[i] = C.uint32_t(ch.Launch.Grid[i])
		out.block[i] = C.uint32_t(ch.Launch.Block[i])
	}
	out.shared_bytes = C.uint32_t(ch.Launch.SharedBytes)
	out.needs_shared_optin = cbool(ch.NeedsSharedOptIn())
	out.pdl_supported = cbool(ch.PDL)
	out.pdl_pays = cbool(ch.PDLPays())
	out.pdl_shared_bytes = C.uint32_t(ch.PDLSharedBytes)
	out.pdl_needs_shared_optin = cbool(ch.PDLNeedsSharedOptIn())
	out.error_bound = C.double(ch.ErrorBound)
	out.gpu_name = p.cstr("")
	out.tuned_shape = out.gpu_name
	if e := ch.Evidence; e != nil {
		out.has_evidence = 1
		out.median_us, out.gbs, out.pct_ceiling = C.double(e.MedianUS), C.double(e.GBs), C.double(e.PctCeiling)
		out.speedup, out.p_value, out.pdl_us = C.double(e.Speedup), C.double(e.P), C.double(e.PDLUS)
		out.gpu_name, out.tuned_shape = p.cstr(e.GPUName), p.cstr(e.TunedShape)
		if !e.Time.IsZero() {
			out.tuned_unix = C.int64_t(e.Time.Unix())
		}
	}
}

func cbool(b bool) C.int32_t {
	if b {
		return 1
	}
	return 0
}

//export gemvtune_source
func gemvtune_source(h *C.gemvtune_policy, arch, format, id C.gt_cstr, out *C.gemvtune_kernel_source,
	errbuf *C.char, errlen C.size_t) (st C.gemvtune_status) {
	var err error
	defer func() { st = finish(recover(), err, errbuf, errlen) }()
	var p *policy
	if p, err = policyOf(h); err != nil {
		return
	}
	if err = outStruct("gemvtune_kernel_source", out == nil, func() C.uint32_t { return out.size }, unsafe.Sizeof(*out)); err != nil {
		return
	}
	var key [3]string
	for i, s := range []struct {
		p    C.gt_cstr
		what string
	}{{arch, "arch"}, {format, "format"}, {id, "id"}} {
		if key[i], err = goString(s.p, s.what); err != nil {
			return
		}
	}
	src, err := p.source(key)
	if err != nil {
		return
	}
	size := out.size
	*out = *src
	out.size = size
	return
}

// source returns the C form of gemvtune.Source for (arch, format, id),
// made once per handle.
func (p *policy) source(key [3]string) (*C.gemvtune_kernel_source, error) {
	p.mu.Lock()
	s, ok := p.sources[key]
	p.mu.Unlock()
	if ok {
		return s, nil
	}
	ks, err := gemvtune.Source(key[0], key[1], key[2])
	if err != nil {
		return nil, err
	}
	opts := (**C.char)(C.calloc(C.size_t(max(len(ks.Options), 1)), C.size_t(unsafe.Sizeof((*C.char)(nil)))))
	optSlice := unsafe.Slice(opts, max(len(ks.Options), 1))
	for i, o := range ks.Options {
		optSlice[i] = p.cstr(o)
	}
	s = (*C.gemvtune_kernel_source)(C.calloc(1, C.size_t(unsafe.Sizeof(C.gemvtune_kernel_source{}))))
	*s = C.gemvtune_kernel_source{code: p.cstr(ks.Code), name: p.cstr(ks.Name), entry: p.cstr(ks.Entry),
		options: opts, num_options: C.size_t(len(ks.Options))}
	p.mu.Lock()
	defer p.mu.Unlock()
	if old, ok := p.sources[key]; ok { // another thread made it meanwhile
		C.free(unsafe.Pointer(opts))
		C.free(unsafe.Pointer(s))
		return old, nil
	}
	p.sources[key] = s
	p.allocs = append(p.allocs, unsafe.Pointer(opts), unsafe.Pointer(s))
	return s, nil
}

// tensor checks a (format, rows, cols) argument triple and returns the
// tensor's bytes.
func tensor(format C.gt_cstr, rows, cols C.int64_t) (string, int, int, int64, error) {
	f, err := goString(format, "format")
	if err != nil {
		return "", 0, 0, 0, err
	}
	r, err := dim(rows, "rows")
	if err != nil {
		return "", 0, 0, 0, err
	}
	c, err := dim(cols, "cols")
	if err != nil {
		return "", 0, 0, 0, err
	}
	n, err := gemvtune.WeightBytes(f, r, c)
	return f, r, c, n, err
}

//export gemvtune_launch
func gemvtune_launch(format, id C.gt_cstr, rows, cols C.int64_t, grid, block, shared *C.uint32_t,
	errbuf *C.char, errlen C.size_t) (st C.gemvtune_status) {
	var err error
	defer func() { st = finish(recover(), err, errbuf, errlen) }()
	if grid == nil || block == nil || shared == nil {
		err = argErr("grid, block and shared_bytes must not be NULL")
		return
	}
	var f, v string
	if f, err = goString(format, "format"); err != nil {
		return
	}
	if v, err = goString(id, "id"); err != nil {
		return
	}
	l, lerr := gemvtune.LaunchOf(f, v, int(rows), int(cols))
	if err = lerr; err != nil {
		return
	}
	g, b := unsafe.Slice(grid, 3), unsafe.Slice(block, 3)
	for i := range 3 {
		g[i], b[i] = C.uint32_t(l.Grid[i]), C.uint32_t(l.Block[i])
	}
	*shared = C.uint32_t(l.SharedBytes)
	return
}

//export gemvtune_repack_size
func gemvtune_repack_size(format C.gt_cstr, layout C.int32_t, rows, cols C.int64_t, size *C.size_t,
	errbuf *C.char, errlen C.size_t) (st C.gemvtune_status) {
	var err error
	defer func() { st = finish(recover(), err, errbuf, errlen) }()
	if size == nil {
		err = argErr("size (size_t*) is NULL")
		return
	}
	var f string
	var n int64
	if f, _, _, n, err = tensor(format, rows, cols); err != nil {
		return
	}
	if err = checkLayout(f, int(layout)); err != nil {
		return
	}
	*size = C.size_t(n)
	return
}

func checkLayout(format string, layout int) error {
	fam, err := variants.FamilyOf(format)
	if err != nil {
		return err
	}
	for _, l := range fam.Layouts() {
		if l == layout {
			return nil
		}
	}
	return fmt.Errorf("%w: %s has no layout %d (accepted: %s)", variants.ErrShape, format, layout,
		strings.Trim(fmt.Sprint(fam.Layouts()), "[]"))
}

//export gemvtune_repack
func gemvtune_repack(format C.gt_cstr, layout C.int32_t, raw C.gt_cbytes, rawLen C.size_t, rows, cols C.int64_t,
	out unsafe.Pointer, outLen C.size_t, errbuf *C.char, errlen C.size_t) (st C.gemvtune_status) {
	var err error
	defer func() { st = finish(recover(), err, errbuf, errlen) }()
	var f string
	var r, c int
	var n int64
	if f, r, c, n, err = tensor(format, rows, cols); err != nil {
		return
	}
	if err = checkLayout(f, int(layout)); err != nil {
		return
	}
	switch {
	case raw == nil || out == nil:
		err = argErr("raw and out must not be NULL")
	case int64(rawLen) != n:
		err = fmt.Errorf("%w: raw_len %d: %s %dx%d has %d bytes", variants.ErrBuffer, uint64(rawLen), f, r, c, n)
	case int64(outLen) < n:
		err = fmt.Errorf("%w: out_len %d: %s %dx%d needs %d bytes", variants.ErrBuffer, uint64(outLen), f, r, c, n)
	}
	if err != nil {
		return
	}
	rb := unsafe.Slice((*byte)(raw), int(n))
	ob := unsafe.Slice((*byte)(out), int(n))
	packed, rerr := gemvtune.Repack(f, int(layout), rb, r, c)
	if rerr != nil {
		err = rerr
		return
	}
	copy(ob, packed)
	return
}

//export gemvtune_reference
func gemvtune_reference(format C.gt_cstr, raw C.gt_cbytes, rawLen C.size_t, x C.gt_cfloats, rows, cols C.int64_t,
	y *C.double, yLen C.size_t, errbuf *C.char, errlen C.size_t) (st C.gemvtune_status) {
	var err error
	defer func() { st = finish(recover(), err, errbuf, errlen) }()
	var f string
	var r, c int
	var n int64
	if f, r, c, n, err = tensor(format, rows, cols); err != nil {
		return
	}
	switch {
	case raw == nil || x == nil || y == nil:
		err = argErr("raw, x and y must not be NULL")
	case int64(rawLen) != n:
		err = fmt.Errorf("%w: raw_len %d: %s %dx%d has %d bytes", variants.ErrBuffer, uint64(rawLen), f, r, c, n)
	case int(yLen) < r:
		err = fmt.Errorf("%w: y_len %d: needs rows = %d", variants.ErrBuffer, uint64(yLen), r)
	}
	if err != nil {
		return
	}
	xs := unsafe.Slice((*float32)(unsafe.Pointer(x)), c)
	ref, rerr := gemvtune.Reference(f, unsafe.Slice((*byte)(raw), int(n)), xs, r, c)
	if rerr != nil {
		err = rerr
		return
	}
	copy(unsafe.Slice((*float64)(unsafe.Pointer(y)), r), ref)
	return
}

// paramsOfC is a zero gemvtune_params, for the tests' size check.
func paramsOfC() C.gemvtune_params { return C.gemvtune_params{} }
