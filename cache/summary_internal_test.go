package cache

import (
	"errors"
	"testing"
	"time"

	"github.com/gemvtune/gemvtune/space"
)

func TestSummaryRoundTrip(t *testing.T) {
	s := Summary{Schema: 1, Params: space.Params{R: 2, F: 3, U: 4, S: 1, W: 16, L: 1}, Class: ClassTolerance,
		Decision: "r2f3u4s1w16l1: +9.1 % over v1", MedianUS: 12.5, GBs: 4012.25, PctCeiling: 90.1, Speedup: 1.091,
		P: 0.0004, Throttled: true, Time: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), GPUName: "NVIDIA H200",
		SourceHash: "abc", ToolVersion: "0.1.0", CubinHash: "ff"}
	got, err := decodeSummary(encodeSummary(s), nil)
	if err != nil || got != s {
		t.Fatalf("round trip = %+v, %v\nwant %+v", got, err, s)
	}
	b := encodeSummary(s)
	for n := 0; n < len(b); n++ {
		if _, err := decodeSummary(b[:n], nil); !errors.Is(err, ErrBadRecord) {
			t.Fatalf("summary cut at %d: %v; want ErrBadRecord", n, err)
		}
	}
}

func FuzzDecodeSummary(f *testing.F) {
	f.Add(encodeSummary(Summary{Schema: 1, Params: space.Stock, Class: ClassExact, GPUName: "x"}))
	f.Add(encodeSummary(Summary{Schema: 1, Params: space.Params{R: 2, U: 1, W: 8, A: 1}, Class: ClassTolerance,
		Exact: ExactSummary{Present: true, Params: space.Params{R: 4, U: 1, W: 8}, Decision: "r4", CubinHash: "ab"}}))
	f.Add([]byte{1, 1, 0})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeSummary(b, nil)
		if err != nil {
			if !errors.Is(err, ErrBadRecord) {
				t.Fatalf("error %v is not ErrBadRecord", err)
			}
			return
		}
		if s.Schema == SchemaVersion {
			if err := s.Params.Validate(); err != nil {
				t.Fatalf("decoded invalid params: %v", err)
			}
			if err := s.Exact.Params.Validate(); s.Exact.Present && err != nil {
				t.Fatalf("decoded invalid exact alternative params: %v", err)
			}
		}
	})
}

// TestSummaryExactRoundTrip: a summary with an exact alternative is
// written as version 3 and reads back whole; without one the version is
// that of before (1, or 2 for knob a).
func TestSummaryExactRoundTrip(t *testing.T) {
	base := Summary{Schema: 1, Params: space.Params{R: 2, U: 1, W: 8, A: 1}, Class: ClassTolerance, Decision: "a1: +80 %",
		MedianUS: 9, GBs: 4000, Speedup: 1.8, P: 0.001, GPUName: "NVIDIA H200", SourceHash: "abc", ToolVersion: "0.1.0", CubinHash: "ff"}
	tests := []struct {
		name    string
		exact   ExactSummary
		version byte
	}{
		{"none", ExactSummary{}, summaryVersion2},
		{"variant", ExactSummary{Present: true, Params: space.Params{R: 4, F: 2, U: 2, W: 4, L: 1}, Decision: "r4f2u2s0w4l1: +31 %",
			MedianUS: 12.5, GBs: 2900, PctCeiling: 65, Speedup: 1.31, P: 0.002, CubinHash: "ee"}, summaryVersion3},
		{"kept stock", ExactSummary{Present: true, Params: space.Stock, Kept: true, Decision: "kept v1", MedianUS: 16, Speedup: 1, P: 0.4}, summaryVersion3},
	}
	for _, tt := range tests {
		s := base
		s.Exact = tt.exact
		b := encodeSummary(s)
		if b[0] != tt.version {
			t.Errorf("%s: version %d; want %d", tt.name, b[0], tt.version)
		}
		if got, err := decodeSummary(b, nil); err != nil || got != s {
			t.Errorf("%s: round trip = %+v, %v\nwant %+v", tt.name, got, err, s)
		}
		for n := 0; n < len(b); n++ {
			if _, err := decodeSummary(b[:n], nil); !errors.Is(err, ErrBadRecord) {
				t.Fatalf("%s: cut at %d: %v; want ErrBadRecord", tt.name, n, err)
			}
		}
		var raw rawSummary // reused: a version 1 summary after it must not keep the alternative
		if decodeRaw(b, &raw) != nil || decodeRaw(encodeSummary(Summary{Schema: 1, Params: space.Stock, Class: ClassExact}), &raw) != nil || raw.Exact.Present {
			t.Errorf("%s: a reused rawSummary kept an alternative", tt.name)
		}
	}
}
