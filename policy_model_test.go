package gemvtune_test

import (
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune"
	"github.com/gemvtune/gemvtune/cache"
)

// TestGPUModels: with records of an H200 and an H100 for sm_90, each GPU
// gets its own, a third sm_90 model gets one of theirs as other-model (or
// stock with GEMV_REQUIRE_SAME_MODEL=1), and another arch gets stock.
func TestGPUModels(t *testing.T) {
	h200 := rec(t, "sm_90", "q4_0", 4096, 4096, "r2f0u2s1w8", cache.ClassExact)
	h100 := rec(t, "sm_90", "q4_0", 4096, 4096, "r4f0u1s0w8", cache.ClassExact)
	h100.GPUName = "NVIDIA H100 80GB HBM3"
	h100near := rec(t, "sm_90", "q4_0", 14336, 4096, "r1f0u4s0w8", cache.ClassExact)
	h100near.GPUName = h100.GPUName
	path := writeCache(t, h200, h100, h100near)
	same := map[string]string{gemvtune.EnvRequireSameModel: "1"}
	for _, tc := range []struct {
		name, gpu, arch string
		rows            int
		env             map[string]string
		id, source      string
		reason          string
	}{
		{"own H200", "NVIDIA H200", "sm_90", 4096, nil, "r2f0u2s1w8", "tuned", "on NVIDIA H200"},
		{"own H100", "NVIDIA H100 80GB HBM3", "sm_90", 4096, nil, "r4f0u1s0w8", "tuned", "on NVIDIA H100"},
		{"own nearest", "NVIDIA H100 80GB HBM3", "sm_90", 12288, nil, "r1f0u4s0w8", "nearest", "14336x4096"},
		{"own nearest before another model's", "NVIDIA H200", "sm_90", 14336, nil, "r2f0u2s1w8", "nearest", "4096x4096"},
		{"H20: another model's", "NVIDIA H20", "sm_90", 4096, nil, "r4f0u1s0w8", "other-model", "nothing usable tuned on h20; from h100-80gb-hbm3"},
		{"H20 with GEMV_REQUIRE_SAME_MODEL=1", "NVIDIA H20", "sm_90", 4096, same, "v1", "default", "GEMV_REQUIRE_SAME_MODEL=1"},
		{"own with GEMV_REQUIRE_SAME_MODEL=1", "NVIDIA H200", "sm_90", 4096, same, "r2f0u2s1w8", "tuned", ""},
		{"no model named", "", "sm_90", 4096, nil, "r4f0u1s0w8", "tuned", "H100"},
		{"no model named, GEMV_REQUIRE_SAME_MODEL=1", "", "sm_90", 4096, same, "r4f0u1s0w8", "tuned", ""},
		{"another arch", "NVIDIA A100-SXM4-80GB", "sm_80", 4096, nil, "v1", "untuned-arch", "never used"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol, err := gemvtune.Open(&gemvtune.Options{CachePath: path, LookupEnv: env(tc.env), GPUName: tc.gpu})
			if err != nil {
				t.Fatal(err)
			}
			for _, lookup := range []func() (gemvtune.Choice, error){
				func() (gemvtune.Choice, error) { return pol.Lookup(tc.arch, "q4_0", tc.rows, 4096) },
				func() (gemvtune.Choice, error) { return pol.LookupGPU(tc.arch, tc.gpu, "q4_0", tc.rows, 4096) },
			} {
				for range 2 { // the memo answers the second time
					c, err := lookup()
					if err != nil {
						t.Fatal(err)
					}
					if c.ID != tc.id || c.Source != tc.source || !strings.Contains(c.Reason, tc.reason) {
						t.Errorf("got %s %s (%s); want %s %s (%q)", c.ID, c.Source, c.Reason, tc.id, tc.source, tc.reason)
					}
				}
			}
		})
	}
}

// TestForcedChecksArch: a forced variant whose instructions the arch
// lacks (s=3 below sm_90, s=2 below sm_80) is stock, forced-gate-failed.
func TestForcedChecksArch(t *testing.T) {
	for _, tc := range []struct {
		id, arch, source string
	}{
		{"r2f0u1s3w8l2", "sm_90", "forced"}, {"r2f0u1s3w8l2", "sm_89", "forced-gate-failed"},
		{"r2f0u1s3w8l2", "sm_70", "forced-gate-failed"}, {"r1f0u2s2w8l1", "sm_80", "forced"},
		{"r1f0u2s2w8l1", "sm_75", "forced-gate-failed"}, {"r2f0u1s0w8", "sm_70", "forced"},
	} {
		pol, err := gemvtune.Open(&gemvtune.Options{CachePath: "/nonexistent/tune.db", ContinueOnCacheError: true,
			LookupEnv: env(map[string]string{"GEMV_FORCE_VARIANT": tc.id})})
		if err != nil {
			t.Fatal(err)
		}
		c, err := pol.Lookup(tc.arch, "q4_0", 4096, 4096)
		if err != nil || c.Source != tc.source {
			t.Errorf("%s on %s: %s (%s), %v; want %s", tc.id, tc.arch, c.Source, c.Reason, err, tc.source)
		}
		if tc.source != "forced" && (c.ID != "v1" || !strings.Contains(c.Reason, tc.arch)) {
			t.Errorf("%s on %s: %s, %q; want stock naming the arch", tc.id, tc.arch, c.ID, c.Reason)
		}
	}
}
