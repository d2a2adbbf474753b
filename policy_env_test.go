package gemvtune_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune"
)

func TestEnvInvalid(t *testing.T) {
	tests := []struct {
		name, value, want string
	}{
		{"GEMV_TUNE_DISABLE", "yes", `GEMV_TUNE_DISABLE="yes": accepted 0 or 1`},
		{"GEMV_TUNE_DISABLE", "2", `accepted 0 or 1`},
		{"GEMV_REQUIRE_EXACT", "true", `GEMV_REQUIRE_EXACT="true": accepted 0 or 1`},
		{"GEMV_FORCE_VARIANT", "fast", `GEMV_FORCE_VARIANT="fast": accepted v1 or a variant ID`},
		{"GEMV_FORCE_VARIANT", "v2", `GEMV_FORCE_VARIANT="v2"`},
		{"GEMV_FORCE_VARIANT", "r5f0u1s0w8", `GEMV_FORCE_VARIANT="r5f0u1s0w8"`},
		{"GEMV_FORCE_VARIANT", "r1f0u1s0w8l0", `canonical form`},
		{"GEMV_FORCE_VARIANT", "r1f0u1s0w8g0", `canonical form`},
		{"GEMV_FORCE_VARIANT", "r1f0u1s0w8g1", `GEMV_FORCE_VARIANT="r1f0u1s0w8g1"`},
		{"GEMV_FORCE_VARIANT", "r1f0u1s0w8l1g2", `GEMV_FORCE_VARIANT="r1f0u1s0w8l1g2"`},
		{"GEMV_FORCE_VARIANT_Q4_0", "r1", `GEMV_FORCE_VARIANT_Q4_0="r1"`},
		{"GEMV_FORCE_VARIANT_Q8_0", "V1", `GEMV_FORCE_VARIANT_Q8_0="V1"`},
		{"GEMV_FORCE_VARIANT_Q4_K", "x", `GEMV_FORCE_VARIANT_Q4_K="x"`},
		{"GEMV_FORCE_VARIANT_AFFINE4", "r2", `GEMV_FORCE_VARIANT_AFFINE4="r2"`},
		{"GEMV_FORCE_VARIANT_BF16", "r2f0", `GEMV_FORCE_VARIANT_BF16="r2f0"`},
		{"GEMV_ROWS_PER_WARP", "5", `GEMV_ROWS_PER_WARP="5": accepted 1, 2, 3, 4, 6, 8`},
		{"GEMV_MIN_BLOCKS", "-1", `GEMV_MIN_BLOCKS="-1": accepted 0, 1, 2, 3, 4, 6, 8`},
		{"GEMV_UNROLL", "3", `GEMV_UNROLL="3": accepted 1, 2, 4, 8`},
		{"GEMV_UNROLL", "04", `GEMV_UNROLL="04": accepted 1, 2, 4, 8`},
		{"GEMV_SMEM_STAGING", "4", `GEMV_SMEM_STAGING="4": accepted 0, 1, 2, 3`},
		{"GEMV_WARPS", "32", `GEMV_WARPS="32": accepted 2, 4, 8, 16`},
		{"GEMV_WARPS", " 8", `GEMV_WARPS=" 8"`},
	}
	for _, tt := range tests {
		_, err := gemvtune.Open(&gemvtune.Options{CachePath: "/nonexistent/x.db", ContinueOnCacheError: true,
			LookupEnv: env(map[string]string{tt.name: tt.value})})
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s=%q: Open error = %v; want one line containing %q", tt.name, tt.value, err, tt.want)
		}
	}
}

func TestEnvValid(t *testing.T) {
	path := writeCache(t, rec(t, "sm_90", "q4_0", 4096, 4096, "r2f0u1s0w8", "exact"))
	tests := []struct {
		name, value string
		source, id  string // lookup of sm_90 q4_0 4096x4096
	}{
		{"GEMV_TUNE_DISABLE", "", "tuned", "r2f0u1s0w8"},
		{"GEMV_TUNE_DISABLE", "0", "tuned", "r2f0u1s0w8"},
		{"GEMV_TUNE_DISABLE", "1", "disabled", "v1"},
		{"GEMV_REQUIRE_EXACT", "0", "tuned", "r2f0u1s0w8"},
		{"GEMV_REQUIRE_EXACT", "1", "tuned", "r2f0u1s0w8"},
		{"GEMV_FORCE_VARIANT", "", "tuned", "r2f0u1s0w8"},
		{"GEMV_FORCE_VARIANT", "v1", "forced", "v1"},
		{"GEMV_FORCE_VARIANT", "r8f8u8s1w16", "forced", "r8f8u8s1w16"},
		{"GEMV_FORCE_VARIANT_Q4_0", "r1f0u2s0w8l1", "forced", "r1f0u2s0w8l1"},
		{"GEMV_FORCE_VARIANT", "r2f0u1s0w8g128", "forced", "r2f0u1s0w8g128"},
		{"GEMV_FORCE_VARIANT_Q4_0", "r1f0u2s1w16g8l1a1", "forced", "r1f0u2s1w16g8l1a1"},
		{"GEMV_FORCE_VARIANT_Q8_0", "r2f0u2s0w8", "tuned", "r2f0u1s0w8"}, // another format
		{"GEMV_FORCE_VARIANT_Q4_K", "v1", "tuned", "r2f0u1s0w8"},
		{"GEMV_FORCE_VARIANT_AFFINE4", "v1", "tuned", "r2f0u1s0w8"},
		{"GEMV_FORCE_VARIANT_BF16", "v1", "tuned", "r2f0u1s0w8"},
		{"GEMV_ROWS_PER_WARP", "6", "forced", "r6f0u1s0w8"},
		{"GEMV_MIN_BLOCKS", "0", "tuned", "r2f0u1s0w8"},
		{"GEMV_MIN_BLOCKS", "8", "forced", "r2f8u1s0w8"},
		{"GEMV_UNROLL", "8", "forced", "r2f0u8s0w8"},
		{"GEMV_SMEM_STAGING", "1", "forced", "r2f0u1s1w8"},
		{"GEMV_SMEM_STAGING", "2", "forced-gate-failed", "v1"}, // q4_0's ring needs l=1
		{"GEMV_SMEM_STAGING", "3", "forced-gate-failed", "v1"}, // q4_0's bulk ring needs l=2
		{"GEMV_WARPS", "2", "forced", "r2f0u1s0w2"},
		{"GEMV_TUNE_CACHE", "/ignored/because/CachePath/is/set", "tuned", "r2f0u1s0w8"},
	}
	for _, tt := range tests {
		p, err := gemvtune.Open(&gemvtune.Options{CachePath: path, LookupEnv: env(map[string]string{tt.name: tt.value})})
		if err != nil {
			t.Errorf("%s=%q: %v", tt.name, tt.value, err)
			continue
		}
		c := lookup(t, p, "sm_90", "q4_0", 4096, 4096)
		if c.Source != tt.source || c.ID != tt.id {
			t.Errorf("%s=%q: %s %s (%s); want %s %s", tt.name, tt.value, c.Source, c.ID, c.Reason, tt.source, tt.id)
		}
	}
}

func TestForceVariantEnv(t *testing.T) {
	for f, want := range map[string]string{"q4_0": "GEMV_FORCE_VARIANT_Q4_0", "q4_K": "GEMV_FORCE_VARIANT_Q4_K", "affine4": "GEMV_FORCE_VARIANT_AFFINE4", "bf16": "GEMV_FORCE_VARIANT_BF16"} {
		if got := gemvtune.ForceVariantEnv(f); got != want {
			t.Errorf("ForceVariantEnv(%s) = %s; want %s", f, got, want)
		}
	}
}

// TestImportGraph keeps engines' start-up free of GPU and cgo packages.
func TestImportGraph(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command here to list imports")
	}
	out, err := exec.Command(gobin, "list", "-deps", "-f", "{{.ImportPath}} {{len .CgoFiles}}", "github.com/gemvtune/gemvtune").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		pkg, cgo := f[0], f[1]
		seen++
		switch {
		case strings.Contains(pkg, "purego"), strings.Contains(pkg, "go-nvml"), strings.HasPrefix(pkg, "github.com/gemvtune/gemvtune/internal/gpu"):
			t.Errorf("package gemvtune imports %s", pkg)
		case pkg == "runtime/cgo" || pkg == "C":
			t.Errorf("package gemvtune pulls in cgo (%s)", pkg)
		case cgo != "0" && strings.Contains(pkg, "."):
			t.Errorf("package gemvtune imports %s, which has cgo files", pkg)
		}
	}
	if seen < 10 {
		t.Fatalf("go list printed only %d packages:\n%s", seen, out)
	}
}
