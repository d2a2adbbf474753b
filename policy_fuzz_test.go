package gemvtune_test

import (
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune"
)

// FuzzEnv feeds arbitrary values to every variable: Open either fails with
// one line naming the variable, or succeeds and lookups never panic.
func FuzzEnv(f *testing.F) {
	names := []string{"GEMV_FORCE_VARIANT", "GEMV_FORCE_VARIANT_Q4_0", "GEMV_ROWS_PER_WARP", "GEMV_MIN_BLOCKS",
		"GEMV_UNROLL", "GEMV_SMEM_STAGING", "GEMV_WARPS", "GEMV_TUNE_DISABLE", "GEMV_REQUIRE_EXACT"}
	f.Add(uint8(0), "r2f3u1s0w8")
	f.Add(uint8(0), "v1")
	f.Add(uint8(1), "r1f0u1s0w8l1")
	f.Add(uint8(4), "3")
	f.Add(uint8(7), "1")
	f.Add(uint8(8), "yes")
	f.Fuzz(func(t *testing.T, which uint8, value string) {
		name := names[int(which)%len(names)]
		p, err := gemvtune.Open(&gemvtune.Options{CachePath: "/nonexistent/tune.db", ContinueOnCacheError: true,
			LookupEnv: env(map[string]string{name: value})})
		if err != nil {
			if !strings.HasPrefix(err.Error(), name+"=") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q does not start with %s= on one line", err, name)
			}
			return
		}
		for _, format := range []string{"q4_0", "q8_0", "q4_K", "affine4", "bf16"} {
			c, err := p.Lookup("sm_90", format, 4096, 4096)
			if err != nil || c.ID == "" || c.Source == "" || c.Reason == "" {
				t.Fatalf("%s=%q: Lookup %s = %+v, %v", name, value, format, c, err)
			}
		}
	})
}
