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
		}
	})
}
