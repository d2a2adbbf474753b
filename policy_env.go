package gemvtune

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

// Environment variables read by Open (docs/design.md §7).
const (
	EnvForceVariant = "GEMV_FORCE_VARIANT" // "v1" or a variant ID; + "_Q4_0" etc. for one format
	EnvTuneCache    = "GEMV_TUNE_CACHE"    // cache file
	EnvTuneDisable  = "GEMV_TUNE_DISABLE"  // 1: stock everywhere
	EnvRequireExact = "GEMV_REQUIRE_EXACT" // 1: only exact-class variants
	// EnvRequireSameModel: 1 makes a record of another GPU model of the
	// same arch give stock instead of source other-model.
	EnvRequireSameModel = "GEMV_REQUIRE_SAME_MODEL"
)

// forcing is a variant forced by one variable.
type forcing struct {
	params space.Params
	env    string // e.g. GEMV_FORCE_VARIANT_Q4_0=r2f0u1s0w8
}

// override sets one knob on top of a choice.
type override struct {
	knob  space.Knob // of space.Knobs, the one with this Env
	value int
	env   string // e.g. GEMV_UNROLL=4
}

// settings is the environment as read once at Open.
type settings struct {
	disable          bool
	requireExact     bool
	requireSameModel bool
	forceAll         *forcing
	forceFormat      map[string]*forcing // format name → forcing
	overrides        []override
	overrideText     string // "GEMV_UNROLL=4, GEMV_WARPS=4"
}

// ForceVariantEnv returns the variable that forces a variant for one
// format, e.g. "GEMV_FORCE_VARIANT_Q4_K" for "q4_K".
func ForceVariantEnv(format string) string { return EnvForceVariant + "_" + strings.ToUpper(format) }

// readEnv reads and checks every variable; an invalid value is an error
// naming the variable and what it accepts. With GEMV_TUNE_DISABLE=1 (the
// switch that must always get an engine to stock) the other variables are
// not used, and an invalid one is a warning instead.
func readEnv(lookup func(string) (string, bool)) (settings, []string, error) {
	disable, err := envBool(lookup, EnvTuneDisable)
	if err != nil {
		return settings{}, nil, err
	}
	s, err := readRest(lookup)
	if disable {
		var warnings []string
		if err != nil {
			warnings = append(warnings, err.Error()+" (ignored: "+EnvTuneDisable+"=1)")
		}
		return settings{disable: true}, warnings, nil
	}
	return s, nil, err
}

// readRest is readEnv for every variable but GEMV_TUNE_DISABLE.
func readRest(lookup func(string) (string, bool)) (settings, error) {
	var s settings
	var err error
	if s.requireExact, err = envBool(lookup, EnvRequireExact); err != nil {
		return s, err
	}
	if s.requireSameModel, err = envBool(lookup, EnvRequireSameModel); err != nil {
		return s, err
	}
	if s.forceAll, err = envForce(lookup, EnvForceVariant); err != nil {
		return s, err
	}
	s.forceFormat = map[string]*forcing{}
	for _, f := range variants.FormatNames {
		fc, err := envForce(lookup, ForceVariantEnv(f))
		if err != nil {
			return s, err
		}
		if fc != nil {
			s.forceFormat[f] = fc
		}
	}
	var texts []string
	for _, k := range space.Knobs {
		if k.Env == "" {
			continue
		}
		v, ok := lookup(k.Env)
		if !ok || v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || !slices.Contains(k.Values, n) || strconv.Itoa(n) != v {
			return s, fmt.Errorf("%s=%q: accepted %s", k.Env, v, joinInts(k.Values))
		}
		s.overrides = append(s.overrides, override{knob: k, value: n, env: k.Env + "=" + v})
		texts = append(texts, k.Env+"="+v)
	}
	s.overrideText = strings.Join(texts, ", ")
	return s, nil
}

func envBool(lookup func(string) (string, bool), name string) (bool, error) {
	v, ok := lookup(name)
	if !ok {
		return false, nil
	}
	switch v {
	case "", "0":
		return false, nil
	case "1":
		return true, nil
	}
	return false, fmt.Errorf("%s=%q: accepted 0 or 1 (empty = unset)", name, v)
}

func envForce(lookup func(string) (string, bool), name string) (*forcing, error) {
	v, ok := lookup(name)
	if !ok || v == "" {
		return nil, nil
	}
	p, err := space.Parse(v)
	if err != nil {
		return nil, fmt.Errorf("%s=%q: accepted v1 or a variant ID such as r2f3u1s0w8 (%v)", name, v, err)
	}
	return &forcing{params: p, env: name + "=" + v}, nil
}

// forced returns the forcing for format: the per-format variable beats the
// global one.
func (s *settings) forced(format string) *forcing {
	if f := s.forceFormat[format]; f != nil {
		return f
	}
	return s.forceAll
}

// apply returns p with the knob overrides set.
func (s *settings) apply(p space.Params) space.Params {
	for _, o := range s.overrides {
		p = o.knob.With(p, o.value)
	}
	return p
}

func joinInts(vs []int) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ", ")
}

// otherVariables are GEMV_* names that autotune and the tests read, not
// the policy: no warning for them.
var otherVariables = []string{"GEMV_NVRTC", "GEMV_WRITE_CUBINS", "GEMV_TEST_"}

// knownVariables lists every variable the policy reads.
func knownVariables() []string {
	names := []string{EnvForceVariant, EnvTuneCache, EnvTuneDisable, EnvRequireExact, EnvRequireSameModel}
	for _, f := range variants.FormatNames {
		names = append(names, ForceVariantEnv(f))
	}
	for _, k := range space.Knobs {
		if k.Env != "" {
			names = append(names, k.Env)
		}
	}
	return names
}

// unknownVariables returns a warning for each GEMV_* name in environ
// (NAME=VALUE) that gemvtune does not read, naming the closest one it does.
func unknownVariables(environ []string) []string {
	known := knownVariables()
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "GEMV_") || slices.Contains(known, name) ||
			slices.ContainsFunc(otherVariables, func(o string) bool { return name == o || strings.HasSuffix(o, "_") && strings.HasPrefix(name, o) }) {
			continue
		}
		best, dist := "", len(name)
		for _, k := range known {
			if d := editDistance(name, k); d < dist {
				best, dist = k, d
			}
		}
		w := name + " is not a variable gemvtune reads: ignored"
		if dist <= 3 {
			w += " (did you mean " + best + "?)"
		}
		out = append(out, w)
	}
	slices.Sort(out)
	return out
}

// editDistance is the Levenshtein distance of a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
