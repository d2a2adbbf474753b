// Package gemvtune is what engines import at start-up: Open reads the
// environment and the tuning cache once, and Lookup says which GEMV kernel
// variant to run for an (arch, format, shape), where that choice came from
// and why.
//
//	pol, err := gemvtune.Open(&gemvtune.Options{ContinueOnCacheError: true})
//	...
//	c, err := pol.Lookup("sm_90", "q4_0", 4096, 14336)
//	// c.ID "r2f3u1s0w8", c.Source "tuned", c.Cubin (nil: compile c.ID's source)
//
// The package reads no GPU and imports neither purego nor cgo; after Open
// it holds no file open and no lock. Open copies the cache's summaries in one
// read transaction (cache.ReadTable) but not its cubins: a stored cubin is
// read on the first Lookup that returns it; see Choice.Cubin. Everything
// else a lookup derives is built on first use and kept, so that repeated
// lookups of a tuned or nearest shape do not allocate. docs/cache.md and
// docs/env.md describe the rules.
package gemvtune

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

// Options configures Open. A nil *Options means the zero value.
type Options struct {
	// CachePath is the cache file; "" means $GEMV_TUNE_CACHE, else the
	// default path (cache.DefaultPath).
	CachePath string
	// ContinueOnCacheError makes a missing or unreadable cache not an
	// error: every lookup then gets stock with source "no-cache" or
	// "corrupt-cache", and the error is kept in Policy.CacheErr. False makes
	// Open return that error.
	ContinueOnCacheError bool
	// LookupEnv reads the environment; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Environ lists the environment as NAME=VALUE, for the warnings about
	// GEMV_* names gemvtune does not read; nil means os.Environ when
	// LookupEnv is nil too, else no such warnings.
	Environ func() []string
	// GPUName is the engine's GPU as NVML or cuDeviceGetName names it
	// ("NVIDIA H200"), the model Lookup prefers: records measured on that
	// model first, then another model of the same arch (source
	// "other-model"). "" means unknown: every model of the arch, by name.
	// LookupGPU asks for another one.
	GPUName string
	// ServeStale serves the records of other kernel sources or another
	// tool version (of this cache schema) as if current, without their
	// cubins: the caller compiles this build's source of the recorded
	// variant. For benchmarks that time a kernel change over recorded
	// winners (autotune bench --chain --compile); an engine never wants
	// it, since a recorded winner may be neither correct nor fastest in
	// other kernels.
	ServeStale bool
}

// Policy answers lookups from an in-memory copy of the cache and the
// environment read at Open. It is safe for concurrent use.
type Policy struct {
	// CachePath is the cache file that was (or would have been) read.
	CachePath string
	// CacheErr is the error that made the cache unusable (with
	// ContinueOnCacheError), or the first unreadable entry when some
	// entries were skipped; nil otherwise.
	CacheErr error
	// Notice is a remark about how the cache was read, "" when there is
	// none: a file of an older layout read from its records.
	Notice string
	// Warnings are what Open noticed in the environment and ignored, one
	// line each: a GEMV_* name gemvtune does not read (a misspelling, with
	// the name it may have meant), or an invalid value under
	// GEMV_TUNE_DISABLE=1.
	Warnings []string

	env         settings
	model       string // cache.NormalizeModel(Options.GPUName), "" if unknown
	serveStale  bool   // Options.ServeStale
	cacheSource string // SourceNoCache or SourceCorruptCache when the cache is unusable
	families    map[string]*famInfo
	tables
}

// tables is what Open read from the cache.
type tables struct {
	t         *cache.Table
	archs     map[string]*archInfo // archs with at least one record or unreadable entry
	bad       map[cache.Key]string // unreadable entries
	cubinPath string               // absolute CachePath, for reading cubins
}

type famInfo struct {
	name string
	fam  variants.Family
	hash string
	idx  int // in famTable's list
}

// famTable indexes the registered families (fixed at init) once.
var famTable = sync.OnceValues(func() (map[string]*famInfo, []*famInfo) {
	m := map[string]*famInfo{}
	var list []*famInfo
	for _, f := range variants.Families() {
		fi := &famInfo{name: f.Format().Name(), fam: f, hash: f.SourceHash(), idx: len(list)}
		m[fi.name] = fi
		list = append(list, fi)
	}
	return m, list
})

// archInfo holds an arch's GPU models, sorted by name.
type archInfo struct {
	name   string
	models []*modelInfo
}

// modelInfo holds the groups of one (arch, GPU model), indexed by
// famInfo.idx (nil: nothing of that format).
type modelInfo struct {
	name   string
	groups []*group
}

// group holds the records of one (arch, GPU model, format).
type group struct {
	model   string
	fam     *famInfo
	members []int32 // table indexes, in index order

	once   sync.Once
	keys   []member                    // members sorted by (cols, rows)
	cubins map[space.Params]*cubinSlot // cubin of each current winner; the last record wins
	// cubin of each current exact alternative, the last record winning
	// (only with GEMV_REQUIRE_EXACT=1, the only lookups that return them)
	altCubins map[space.Params]*cubinSlot
	ids       map[space.Params]string  // ID of each current winner
	staleWhy  map[int32]string         // why each stale record (by table index) is stale
	memo      []atomic.Pointer[memo]   // by keys index: Lookup's answer for exactly that key
	memoAny   []atomic.Pointer[memo]   // the same for lookups that name no GPU model
	near      []atomic.Pointer[Choice] // by keys index: the nearest-rule choice built on that record
}

// member is a record of a group, with what lookups need of it.
type member struct {
	key     uint64 // cols<<32 | rows
	i       int32  // in the table
	current bool   // not stale (else group.staleWhy[i] says why)
	exact   bool   // exact-class winner
	alt     bool   // the record has an exact alternative (for GEMV_REQUIRE_EXACT=1)
}

func shapeKey(rows, cols int) uint64 { return uint64(cols)<<32 | uint64(rows) }

type memo struct {
	c   Choice
	err error
}

// cubinSlot is one stored cubin, read by the first lookup that needs it.
type cubinSlot struct {
	ref  cache.CubinRef
	once sync.Once
	data []byte
}

// Open reads the environment (docs/design.md §7) and the cache's summaries, then
// closes the file. An invalid environment value is an error naming the
// variable and the accepted values. With GEMV_TUNE_DISABLE=1 the cache is
// not read.
func Open(opts *Options) (*Policy, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	lookup := o.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	env, warnings, err := readEnv(lookup)
	if err != nil {
		return nil, envError{err}
	}
	environ := o.Environ
	if environ == nil && o.LookupEnv == nil {
		environ = os.Environ
	}
	if environ != nil {
		warnings = append(warnings, unknownVariables(environ())...)
	}
	fams, _ := famTable()
	p := &Policy{env: env, families: fams, Warnings: warnings, serveStale: o.ServeStale}
	if o.GPUName != "" {
		p.model = cache.NormalizeModel(o.GPUName)
	}
	if env.disable {
		return p, nil
	}
	p.CachePath = o.CachePath
	if p.CachePath == "" {
		if p.CachePath, err = cache.DefaultPathEnv(lookup); err != nil {
			return p.cacheFailed(o, err, SourceNoCache)
		}
	}
	t, err := cache.ReadTable(p.CachePath, nil)
	if err != nil {
		src := SourceCorruptCache
		switch {
		case errors.Is(err, cache.ErrNotExist):
			src = SourceNoCache
		case errors.Is(err, cache.ErrLocked):
			src = SourceBusyCache
		}
		return p.cacheFailed(o, err, src)
	}
	p.build(t)
	p.Notice = t.Notice()
	p.cubinPath = p.CachePath
	if abs, err := filepath.Abs(p.CachePath); err == nil {
		p.cubinPath = abs
	}
	return p, nil
}

func (p *Policy) cacheFailed(o Options, err error, src string) (*Policy, error) {
	if !o.ContinueOnCacheError {
		return nil, fmt.Errorf("tuning cache: %w", err)
	}
	p.CacheErr, p.cacheSource = err, src
	return p, nil
}

// build notes the unreadable entries and sorts the records into their
// (arch, GPU model, format) groups, keeping index order. Everything else
// is derived per group on first use (group.init).
func (p *Policy) build(t *cache.Table) {
	p.t = t
	_, fams := famTable()
	p.archs = map[string]*archInfo{}
	arch := func(name string) *archInfo {
		a := p.archs[name]
		if a == nil {
			a = &archInfo{name: name}
			p.archs[name] = a
		}
		return a
	}
	if bad := t.Bad(); len(bad) > 0 {
		p.bad = make(map[cache.Key]string, len(bad))
		for _, b := range bad {
			p.bad[b.Key] = b.Err.Error()
			if b.Key.Arch != "" {
				arch(b.Key.Arch)
			}
		}
		p.CacheErr = fmt.Errorf("%d unreadable cache entries skipped, first: %w", len(bad), bad[0].Err)
	}
	type name struct{ arch, model, format string }
	groups := map[name]*group{}
	var last name
	var lastGroup *group
	for i := 0; i < t.Len(); i++ {
		a, m, f := t.Group(i)
		k := name{a, m, f}
		g := lastGroup
		if k != last || g == nil {
			if g = groups[k]; g == nil {
				fi := p.families[f]
				if fi == nil {
					continue // a format this build does not know: never looked up
				}
				g = &group{model: m, fam: fi}
				groups[k] = g
				ai := arch(a)
				mi := ai.model(m)
				if mi == nil {
					mi = &modelInfo{name: m, groups: make([]*group, len(fams))}
					ai.models = append(ai.models, mi)
					slices.SortFunc(ai.models, func(x, y *modelInfo) int { return cmp.Compare(x.name, y.name) })
				}
				mi.groups[fi.idx] = g
			}
			last, lastGroup = k, g
		}
		g.members = append(g.members, int32(i))
	}
}

// model returns a's model of that name, or nil.
func (a *archInfo) model(name string) *modelInfo {
	for _, m := range a.models {
		if m.name == name {
			return m
		}
	}
	return nil
}

// init sorts g's members by shape, notes which are stale, collects the
// cubins of its current records and makes room for the lookups' memos, on
// first use.
func (g *group) init(p *Policy) {
	g.once.Do(func() {
		keys := make([]member, len(g.members))
		cubins := map[space.Params]*cubinSlot{}
		ids := map[space.Params]string{}
		slots := map[string]*cubinSlot{}
		type staleKey struct {
			schema    int
			src, tool string
		}
		whys := map[staleKey]string{}
		var staleWhy map[int32]string
		var altCubins map[space.Params]*cubinSlot
		for j, i := range g.members {
			s := p.t.Summary(int(i))
			m := &keys[j]
			*m = member{key: shapeKey(s.Rows, s.Cols), i: i, exact: s.Class == cache.ClassExact, current: true,
				alt: s.Exact.Present}
			stale := s.Schema != cache.SchemaVersion || s.SourceHash != g.fam.hash || s.ToolVersion != cache.ToolVersion
			if stale && p.serveStale && s.Schema == cache.SchemaVersion {
				if _, ok := ids[s.Params]; !ok {
					ids[s.Params] = idOf(s.Params)
				}
				continue // served, its cubin not
			}
			if stale {
				sk := staleKey{s.Schema, s.SourceHash, s.ToolVersion}
				why, ok := whys[sk]
				if !ok {
					_, why = s.Stale(g.fam.hash, cache.ToolVersion)
					whys[sk] = why
				}
				m.current = false
				if staleWhy == nil {
					staleWhy = map[int32]string{}
				}
				staleWhy[i] = why
				continue
			}
			if _, ok := ids[s.Params]; !ok {
				ids[s.Params] = idOf(s.Params)
			}
			slot := func(hash string) *cubinSlot {
				if hash == "" {
					return nil
				}
				sl := slots[hash]
				if sl == nil {
					ref, ok := p.t.Cubin(hash)
					if !ok {
						return nil // not stored
					}
					sl = &cubinSlot{ref: ref}
					slots[hash] = sl
				}
				return sl
			}
			if sl := slot(s.CubinHash); sl != nil {
				cubins[s.Params] = sl
				if k := cubinKey(s.Params); cubins[k] == nil {
					cubins[k] = sl // every g of a staged variant runs this cubin
				}
			}
			if x := &s.Exact; x.Present && p.env.requireExact {
				if _, ok := ids[x.Params]; !ok {
					ids[x.Params] = idOf(x.Params)
				}
				if sl := slot(x.CubinHash); sl != nil {
					if altCubins == nil {
						altCubins = map[space.Params]*cubinSlot{}
					}
					altCubins[x.Params] = sl
				}
			}
		}
		slices.SortFunc(keys, func(a, b member) int { // by shape, then index order
			if c := cmp.Compare(a.key, b.key); c != 0 {
				return c
			}
			return cmp.Compare(a.i, b.i)
		})
		g.keys, g.cubins, g.altCubins, g.ids, g.staleWhy = keys, cubins, altCubins, ids, staleWhy
		g.memo = make([]atomic.Pointer[memo], len(keys))
		g.memoAny = make([]atomic.Pointer[memo], len(keys))
		g.near = make([]atomic.Pointer[Choice], len(keys))
	})
}
