package main

import (
	"bytes"
	"errors"
	"github.com/gemvtune/gemvtune/cache"
	"path/filepath"
	"strings"
	"testing"
)

func TestShowCommand(t *testing.T) {
	stale := testRecord(t, "sm_80", "q8_0", 4096, 4096, "v1")
	stale.SourceHash = "0000000000000000"
	tuned := testRecord(t, "sm_90", "q4_0", 4096, 14336, "r2f3u1s0w8")
	tuned.ReadUS = 17.2                                                         // the same-bytes read: 17.2/21.5 = 80.0 % of it
	tuned.PDLUS, tuned.LaunchPDL, tuned.PDLShared = 19.87, true, 119808         // in a chain of PDL launches, recorded so
	inToken := testRecord(t, "sm_90", "q4_0", 28672, 4096, "r2f0u2s3w16g7l2a1") // chosen in a token: no chain of its own
	inToken.LaunchPDL, inToken.PDLShared = true, 43264
	inToken.Token = &cache.TokenChoice{Model: "llama-3-8b", Isolated: "r1f0u2s3w16g7l2a1", PDL: true, TokenUS: 1160, BaseTokenUS: 1173.8}
	tuned.Refined, inToken.Refined = []string{"llama-3-8b", "mistral-7b"}, []string{"llama-3-8b"}
	path := cacheWith(t, tuned, stale, inToken)
	var out, errOut bytes.Buffer
	if err := showMain([]string{"--cache", path}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if !strings.Contains(s, "r2f0u2s3w16g7l2a1 (token)") || !strings.Contains(s, "pdl 43264 B") {
		t.Errorf("show output does not mark the winner chosen in a token, or its launch:\n%s", s)
	}
	for _, want := range []string{"sm_90", "sm_80", "r2f3u1s0w8", "4096x14336", "3712", "83.4", "80.0", "1.080×", "yes: kernel source changed", "no"} {
		if !strings.Contains(s, want) {
			t.Errorf("show output lacks %q:\n%s", want, s)
		}
	}
	if !strings.Contains(s, "refined in a model's token (autotune --refine):\n  sm_90 h200 q4_0: llama-3-8b (2 shapes)\n  sm_90 h200 q4_0: mistral-7b (1 shape)\n") {
		t.Errorf("show output does not list the refined tokens:\n%s", s)
	}
	if !strings.Contains(s, "PDL µs") || !strings.Contains(s, "19.87") || !strings.Contains(s, "pdl 119808 B") {
		t.Errorf("show output lacks the PDL µs and launch columns or their values:\n%s", s)
	}
	if !strings.Contains(s, "% of read") || strings.Count(s, " - ") < 4 { // the sm_80 record has no read, no PDL time, no launch mode: "-", and no exact alternative
		t.Errorf("show output lacks the %% of read column or its '-' for a record without it:\n%s", s)
	}
	out.Reset()
	if err := showMain([]string{"--cache", path, "--arch", "sm_90"}, &out, &errOut); err != nil || strings.Contains(out.String(), "sm_80") {
		t.Errorf("--arch sm_90 shows other archs: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := showMain([]string{"--cache", path, "--arch", "sm_75"}, &out, &errOut); err != nil || !strings.Contains(out.String(), "no records for sm_75") {
		t.Errorf("empty arch: %v %q", err, out.String())
	}
	var u usageError
	if err := showMain([]string{"--arch", "90"}, &out, &errOut); !errors.As(err, &u) {
		t.Errorf("bad arch: %v; want usage error", err)
	}
	if err := showMain([]string{"--cache", filepath.Join(t.TempDir(), "none.db")}, &out, &errOut); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing cache: %v", err)
	}
}
