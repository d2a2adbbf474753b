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
// it holds no file open and no lock. docs/cache.md and docs/env.md describe
// the rules.
package gemvtune

import (
	"errors"
	"fmt"
	"os"
	"sort"

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

	env         settings
	cacheSource string // SourceNoCache or SourceCorruptCache when the cache is unusable
	families    map[string]*famInfo
	groups      map[groupKey]*group
	byKey       map[cache.Key]*entry
	archs       map[string]bool // archs with at least one record
	bad         map[cache.Key]string
}

type famInfo struct {
	fam  variants.Family
	hash string
}

type groupKey struct{ arch, format string }

// group holds the records of one (arch, format).
type group struct {
	byCols map[int][]*entry // usable (not stale) records, sorted by rows
	cubins map[space.Params][]byte
}

// entry is one record; sum points into the snapshot.
type entry struct {
	sum      *cache.Summary
	stale    bool
	staleWhy string
}

// Open reads the environment (design.md §7) and the whole cache, then closes
// the file. An invalid environment value is an error naming the variable
// and the accepted values. With GEMV_TUNE_DISABLE=1 the cache is not read.
func Open(opts *Options) (*Policy, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	lookup := o.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	env, err := readEnv(lookup)
	if err != nil {
		return nil, err
	}
	p := &Policy{env: env, families: map[string]*famInfo{}, groups: map[groupKey]*group{},
		archs: map[string]bool{}, bad: map[cache.Key]string{}}
	for _, f := range variants.Families() {
		p.families[f.Format().Name()] = &famInfo{fam: f, hash: f.SourceHash()}
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
	snap, err := readSnapshot(p.CachePath)
	if err != nil {
		src := SourceCorruptCache
		if errors.Is(err, cache.ErrNotExist) {
			src = SourceNoCache
		}
		return p.cacheFailed(o, err, src)
	}
	p.build(snap)
	return p, nil
}

func readSnapshot(path string) (*cache.Snapshot, error) {
	db, err := cache.Open(path, &cache.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return db.Snapshot(true)
}

func (p *Policy) cacheFailed(o Options, err error, src string) (*Policy, error) {
	if !o.ContinueOnCacheError {
		return nil, fmt.Errorf("tuning cache: %w", err)
	}
	p.CacheErr, p.cacheSource = err, src
	return p, nil
}

// build indexes the snapshot: records by shape, usable records by cols
// (sorted by rows) for nearest lookups, and cubins by variant.
func (p *Policy) build(snap *cache.Snapshot) {
	for _, b := range snap.Bad {
		p.bad[b.Key] = b.Err.Error()
		if b.Key.Arch != "" {
			p.archs[b.Key.Arch] = true
		}
		if p.CacheErr == nil {
			p.CacheErr = fmt.Errorf("%d unreadable cache entries skipped, first: %w", len(snap.Bad), b.Err)
		}
	}
	entries := make([]entry, len(snap.Summaries))
	p.byKey = make(map[cache.Key]*entry, len(snap.Summaries))
	var last *group
	var lastKey groupKey
	for i := range snap.Summaries {
		s := &snap.Summaries[i]
		p.archs[s.Arch] = true
		fi := p.families[s.Format]
		if fi == nil {
			continue // a format this build does not know: never looked up
		}
		gk := groupKey{s.Arch, s.Format}
		g := last
		if gk != lastKey || g == nil {
			if g = p.groups[gk]; g == nil {
				g = &group{byCols: map[int][]*entry{}, cubins: map[space.Params][]byte{}}
				p.groups[gk] = g
			}
			last, lastKey = g, gk
		}
		e := &entries[i]
		e.sum = s
		e.stale, e.staleWhy = s.Stale(fi.hash, cache.ToolVersion)
		p.byKey[s.Key] = e
		if e.stale {
			continue
		}
		g.byCols[s.Cols] = append(g.byCols[s.Cols], e)
		if s.CubinHash != "" {
			if c := snap.Cubins[s.CubinHash]; c != nil {
				g.cubins[s.Params] = c
			}
		}
	}
	for _, g := range p.groups {
		for _, list := range g.byCols {
			sort.Slice(list, func(i, j int) bool { return list[i].sum.Rows < list[j].sum.Rows })
		}
	}
}
