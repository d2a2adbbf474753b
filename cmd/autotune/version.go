package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/variants"
)

// versionLine is what `autotune --version` prints: the tool, the commit it
// was built from (when the build recorded one), the cache layout and record
// schema it writes, the kernel generator, and the Go that built it.
func versionLine() string {
	rev := "unknown commit"
	if bi, ok := debug.ReadBuildInfo(); ok {
		var r, dirty string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				r = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = ", modified"
				}
			}
		}
		if len(r) > 12 {
			r = r[:12]
		}
		if r != "" {
			rev = "commit " + r + dirty
		}
	}
	return fmt.Sprintf("autotune %s (%s; cache layout %d, record schema %d; %s; %s)", cache.ToolVersion, rev,
		cache.FileVersion, cache.SchemaVersion, variants.GeneratorVersion, runtime.Version())
}
