package gemvtune_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune"
	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

// TestPDLPaysUnderRollback follows docs/user-guide.md's PDL advice with the
// documented rollback: the recorded launch mode and its pinned shared
// memory hold for the tuned shape only; a nearest shape (another grid),
// a forced variant or a disabled tuner get plain launches and the
// launch's own shared memory, and no panic.
func TestPDLPaysUnderRollback(t *testing.T) {
	const pinned = 117 << 10
	r := rec(t, "sm_90", "q4_0", 4096, 4096, "r2f0u2s3w16g2l2a1", cache.ClassTolerance)
	r.PDLUS, r.LaunchPDL, r.PDLShared = r.MedianUS-1, true, pinned
	path := writeCache(t, r)
	for _, tc := range []struct {
		env    map[string]string
		rows   int
		pays   bool
		shared uint32 // 0: the launch's own
	}{
		{nil, 4096, true, pinned},
		{nil, 4000, false, 0},
		{map[string]string{"GEMV_FORCE_VARIANT": "v1"}, 4096, false, 0},
		{map[string]string{"GEMV_FORCE_VARIANT": "r2f0u2s3w16g2l2a1"}, 4096, false, 0},
		{map[string]string{"GEMV_TUNE_DISABLE": "1"}, 4096, false, 0},
	} {
		pol, err := gemvtune.Open(&gemvtune.Options{CachePath: path, LookupEnv: env(tc.env)})
		if err != nil {
			t.Fatal(err)
		}
		c, err := pol.Lookup("sm_90", "q4_0", tc.rows, 4096)
		if err != nil {
			t.Fatal(err)
		}
		want := tc.shared
		if want == 0 {
			want = c.Launch.SharedBytes
		}
		if c.PDLPays() != tc.pays || c.PDLSharedBytes != want || c.PDLNeedsSharedOptIn() != (want > 48<<10) {
			t.Errorf("%v %d rows: PDLPays %v, PDL shared %d (opt-in %v); want %v, %d (%s)", tc.env, tc.rows,
				c.PDLPays(), c.PDLSharedBytes, c.PDLNeedsSharedOptIn(), tc.pays, want, c.Reason)
		}
	}
}

// TestChoiceLaunch: every choice carries its family's launch for the
// looked-up shape, nearest ones included, and the opt-in above 48 KiB.
func TestChoiceLaunch(t *testing.T) {
	path := writeCache(t, rec(t, "sm_90", "q4_0", 28672, 4096, "r1f0u4s3w16g14l2a1", cache.ClassTolerance))
	pol, err := gemvtune.Open(&gemvtune.Options{CachePath: path, LookupEnv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	fam, _ := variants.FamilyOf("q4_0")
	for _, rows := range []int{28672, 14336, 4096} {
		c, err := pol.Lookup("sm_90", "q4_0", rows, 4096)
		if err != nil {
			t.Fatal(err)
		}
		if want := fam.Launch(c.Params, rows, 4096); c.Launch != want || c.Launch.Grid[0] == 0 {
			t.Errorf("%d rows (%s): launch %+v, want %+v", rows, c.ID, c.Launch, want)
		}
		if c.NeedsSharedOptIn() != (c.Launch.SharedBytes > 48<<10) {
			t.Errorf("%d rows: NeedsSharedOptIn %v with %d bytes", rows, c.NeedsSharedOptIn(), c.Launch.SharedBytes)
		}
		if c.ErrorBound != fam.ErrorBound(c.Params) {
			t.Errorf("%d rows: bound %g", rows, c.ErrorBound)
		}
	}
}

func TestKernelHelpersReject(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"Source bad arch", errOf(gemvtune.Source("sm9", "q4_0", "v1")), space.ErrBadArch},
		{"Source bad ID", errOf(gemvtune.Source("sm_90", "q4_0", "r0")), space.ErrBadID},
		{"Source unknown format", errOf(gemvtune.Source("sm_90", "q1", "v1")), variants.ErrUnknownFormat},
		{"LaunchOf gate", errOf(gemvtune.LaunchOf("q4_0", "r1f0u4s3w16", 8, 32)), variants.ErrShape},
		{"LaunchOf 0 rows", errOf(gemvtune.LaunchOf("q4_0", "v1", 0, 32)), space.ErrBadShape},
		{"WeightBytes cols", errOf(gemvtune.WeightBytes("q4_K", 1, 128)), variants.ErrShape},
		{"Repack short", errOf(gemvtune.Repack("q4_0", 1, make([]byte, 17), 1, 32)), variants.ErrBuffer},
		{"Repack layout", errOf(gemvtune.Repack("bf16", 1, make([]byte, 64), 1, 32)), variants.ErrShape},
		{"Reference short", errOf(gemvtune.Reference("q8_0", make([]byte, 33), make([]float32, 32), 1, 32)), variants.ErrBuffer},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.want)
		}
	}
	ks, err := gemvtune.Source("sm_80", "q4_K", "r2f0u2s1w8l1a1")
	if err != nil || ks.Entry != "gemv" || len(ks.Options) != 1 || ks.Options[0] != "--gpu-architecture=sm_80" ||
		!strings.Contains(ks.Code, "#define GEMV_R 2") {
		t.Errorf("Source: %v %+v", err, ks.Options)
	}
}

func errOf[T any](_ T, err error) error { return err }

// TestDisableBeatsInvalidValues: the rollback switch works whatever else
// the environment holds; what it ignores becomes a warning.
func TestDisableBeatsInvalidValues(t *testing.T) {
	e := map[string]string{"GEMV_TUNE_DISABLE": "1", "GEMV_UNROLL": "3", "GEMV_FORCE_VARIANT": "fast"}
	pol, err := gemvtune.Open(&gemvtune.Options{CachePath: "/nonexistent/tune.db", LookupEnv: env(e)})
	if err != nil {
		t.Fatalf("GEMV_TUNE_DISABLE=1 with invalid values: %v", err)
	}
	if c, _ := pol.Lookup("sm_90", "q4_0", 4096, 4096); c.Source != gemvtune.SourceDisabled {
		t.Errorf("source %s", c.Source)
	}
	if len(pol.Warnings) != 1 || !strings.Contains(pol.Warnings[0], "ignored") {
		t.Errorf("warnings %q", pol.Warnings)
	}
	delete(e, "GEMV_TUNE_DISABLE")
	if _, err := gemvtune.Open(&gemvtune.Options{LookupEnv: env(e)}); !errors.Is(err, gemvtune.ErrInvalidEnv) {
		t.Errorf("without GEMV_TUNE_DISABLE: %v, want ErrInvalidEnv", err)
	}
}

// TestUnknownVariablesWarn: a misspelt GEMV_* name is a warning naming the
// variable it may have meant; names the policy or autotune reads are not.
func TestUnknownVariablesWarn(t *testing.T) {
	environ := []string{"GEMV_FORCE_VARIANT_Q40=v1", "GEMV_UNROL=2", "GEMV_SOMETHING_ELSE_ENTIRELY=1", "GEMV_NVRTC=/x",
		"GEMV_TEST_SPACE=all", "GEMV_FORCE_VARIANT_Q4_0=v1", "GEMV_WARPS=8", "PATH=/bin", "GEMV_REQUIRE_SAME_MODEL=1"}
	pol, err := gemvtune.Open(&gemvtune.Options{CachePath: "/nonexistent/tune.db", ContinueOnCacheError: true,
		LookupEnv: env(nil), Environ: func() []string { return environ }})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"GEMV_FORCE_VARIANT_Q40 is not a variable gemvtune reads: ignored (did you mean GEMV_FORCE_VARIANT_Q4_0?)",
		"GEMV_SOMETHING_ELSE_ENTIRELY is not a variable gemvtune reads: ignored",
		"GEMV_UNROL is not a variable gemvtune reads: ignored (did you mean GEMV_UNROLL?)",
	}
	if strings.Join(pol.Warnings, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(pol.Warnings, "\n"), strings.Join(want, "\n"))
	}
}
