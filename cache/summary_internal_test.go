package cache

import (
	"encoding/hex"
	"errors"
	"math"
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
	f.Add(encodeSummary(Summary{Schema: 1, Params: space.Params{R: 2, U: 1, W: 8, G: 8}, Class: ClassExact, GPUName: "x"}))
	f.Add(encodeSummary(Summary{Schema: 1, Params: space.Params{R: 2, U: 1, W: 8, G: 128, A: 1}, Class: ClassTolerance,
		Exact: ExactSummary{Present: true, Params: space.Params{R: 4, U: 1, W: 8, G: 4}, Decision: "r4", CubinHash: "ab"}}))
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
		b := checkSummaryRoundTrip(t, tt.name, s, tt.version)
		var raw rawSummary // reused: a version 1 summary after it must not keep the alternative
		if decodeRaw(b, &raw) != nil || decodeRaw(encodeSummary(Summary{Schema: 1, Params: space.Stock, Class: ClassExact}), &raw) != nil || raw.Exact.Present {
			t.Errorf("%s: a reused rawSummary kept an alternative", tt.name)
		}
	}
}

// oldSummary is the summary the golden encodings of TestSummaryOldVersions
// were made from (by the encoder of the release before knob G).
func oldSummary(a int, exact ExactSummary) Summary {
	return Summary{Schema: 1, Params: space.Params{R: 2, F: 3, U: 4, S: 1, W: 16, L: 1, A: a}, Class: ClassTolerance,
		Decision: "d", MedianUS: 12.5, GBs: 4000, PctCeiling: 90, Speedup: 1.5, P: 0.25, Throttled: true,
		Time: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), GPUName: "H200", SourceHash: "abc", ToolVersion: "0.1.0",
		CubinHash: "ff", Exact: exact}
}

// TestSummaryOldVersions: summaries with G = 0 are written byte for byte
// as the release before knob G wrote them (versions 1 to 3), and those
// bytes read back.
func TestSummaryOldVersions(t *testing.T) {
	tests := []struct {
		name   string
		s      Summary
		golden string
	}{
		{"version 1", oldSummary(0, ExactSummary{}),
			"010100020003000400010010000100030000000000002940000000000040af400000000000805640000000000000f83f000000000000d03f" +
				"0632961cf2ca861801006404004832303003006162630500302e312e3002006666"},
		{"version 2", oldSummary(1, ExactSummary{}),
			"0201000200030004000100100001000100030000000000002940000000000040af400000000000805640000000000000f83f000000000000d03f" +
				"0632961cf2ca861801006404004832303003006162630500302e312e3002006666"},
		{"version 3", oldSummary(1, ExactSummary{Present: true, Params: space.Params{R: 4, F: 2, U: 2, W: 4, L: 1}, Decision: "x",
			MedianUS: 20, GBs: 3000, PctCeiling: 60, Speedup: 1.25, P: 0.5, CubinHash: "ee"}),
			"0301000200030004000100100001000100030000000000002940000000000040af400000000000805640000000000000f83f000000000000d03f" +
				"0632961cf2ca861801006404004832303003006162630500302e312e3002006666" +
				"0400020002000000040001000000000000000000003440000000000070a7400000000000004e40000000000000f43f000000000000e03f01007802006565"},
		{"version 3 kept", oldSummary(1, ExactSummary{Present: true, Params: space.Stock, Kept: true, Decision: "kept v1", Speedup: 1, P: 1}),
			"0301000200030004000100100001000100030000000000002940000000000040af400000000000805640000000000000f83f000000000000d03f" +
				"0632961cf2ca861801006404004832303003006162630500302e312e3002006666" +
				"010000000100000008000000000001000000000000000000000000000000000000000000000000000000000000f03f000000000000f03f07006b6570742076310000"},
	}
	for _, tt := range tests {
		golden, err := hex.DecodeString(tt.golden)
		if err != nil {
			t.Fatal(err)
		}
		if got := encodeSummary(tt.s); hex.EncodeToString(got) != tt.golden {
			t.Errorf("%s: encoded %x\nwant    %s", tt.name, got, tt.golden)
		}
		if got, err := decodeSummary(golden, nil); err != nil || got != tt.s {
			t.Errorf("%s: golden decodes to %+v, %v\nwant %+v", tt.name, got, err, tt.s)
		}
	}
}

// TestSummaryKnobG: a summary whose winner or exact alternative has G != 0
// is written as version 4 and reads back whole; damage is ErrBadRecord.
func TestSummaryKnobG(t *testing.T) {
	base := Summary{Schema: 1, Params: space.Params{R: 2, U: 1, W: 8}, Class: ClassTolerance, Decision: "g: +20 %",
		MedianUS: 9, GBs: 4000, Speedup: 1.2, P: 0.001, GPUName: "NVIDIA H200", SourceHash: "abc", ToolVersion: "0.1.0", CubinHash: "ff"}
	alt := ExactSummary{Present: true, Params: space.Params{R: 4, F: 2, U: 2, W: 4, L: 1}, Decision: "r4f2u2s0w4l1: +31 %",
		MedianUS: 12.5, GBs: 2900, PctCeiling: 65, Speedup: 1.31, P: 0.002, CubinHash: "ee"}
	altG := alt
	altG.Params.G = 2
	tests := []struct {
		name    string
		g, a, l int
		exact   ExactSummary
		version byte
	}{
		{"winner g, no alternative", 8, 0, 0, ExactSummary{}, summaryVersion4},
		{"winner g128 a1 l1", 128, 1, 1, ExactSummary{}, summaryVersion4},
		{"winner g, alternative without", 2, 1, 0, alt, summaryVersion4},
		{"alternative g only", 0, 1, 0, altG, summaryVersion4},
		{"both g", 64, 0, 1, altG, summaryVersion4},
		{"winner g, kept stock", 16, 1, 0, ExactSummary{Present: true, Params: space.Stock, Kept: true, Decision: "kept v1", Speedup: 1, P: 1}, summaryVersion4},
		{"no g", 0, 1, 0, alt, summaryVersion3},
	}
	for _, tt := range tests {
		s := base
		s.Params.G, s.Params.A, s.Params.L = tt.g, tt.a, tt.l
		s.Exact = tt.exact
		b := checkSummaryRoundTrip(t, tt.name, s, tt.version)
		var raw rawSummary // reused: a version 1 summary after it must not keep G or the alternative
		if decodeRaw(b, &raw) != nil || raw.Params != s.Params || decodeRaw(encodeSummary(Summary{Schema: 1, Params: space.Stock, Class: ClassExact}), &raw) != nil ||
			raw.Exact.Present || raw.Params != space.Stock {
			t.Errorf("%s: a reused rawSummary kept G or an alternative: %+v", tt.name, raw)
		}
	}
	// An invalid G, and a bad alternative marker, are refused.
	s := base
	s.Params.G = 1
	if _, err := decodeSummary(encodeSummary(s), nil); !errors.Is(err, ErrBadRecord) {
		t.Errorf("G=1 decoded: %v", err)
	}
	s = base
	s.Exact = altG
	s.Exact.Params.G = 256
	if _, err := decodeSummary(encodeSummary(s), nil); !errors.Is(err, ErrBadRecord) {
		t.Errorf("alternative G=256 decoded: %v", err)
	}
	s.Schema = 2 // another schema's knobs are not checked: kept as read
	if got, err := decodeSummary(encodeSummary(s), nil); err != nil || got != s {
		t.Errorf("schema 2 with G=256 = %+v, %v", got, err)
	}
	s = base
	s.Params.G = 4
	b := encodeSummary(s)
	b[len(b)-1] = 2 // the marker: 0 or 1
	if _, err := decodeSummary(b, nil); !errors.Is(err, ErrBadRecord) {
		t.Errorf("alternative marker 2 decoded: %v", err)
	}
}

// TestParamsOK: paramsOK, and knobBytesOK for what a byte holds, accept
// exactly what Validate accepts.
func TestParamsOK(t *testing.T) {
	if knobMasks() == nil {
		t.Fatal("knobMasks is nil: paramsOK would always defer to Validate (knobs changed?)")
	}
	tests := []struct {
		name string
		p    space.Params
	}{
		{"stock", space.Stock},
		{"g0", space.Params{R: 2, U: 4, S: 1, W: 16, L: 1, A: 1}},
		{"g2", space.Params{R: 2, U: 4, S: 1, W: 16, G: 2, L: 1, A: 1}},
		{"g128", space.Params{R: 8, F: 8, U: 8, S: 1, W: 16, G: 128}},
		{"g1", space.Params{R: 1, U: 1, W: 8, G: 1}},
		{"g3", space.Params{R: 1, U: 1, W: 8, G: 3}},
		{"g256", space.Params{R: 1, U: 1, W: 8, G: 256}},
		{"g-2", space.Params{R: 1, U: 1, W: 8, G: -2}},
		{"g64 l2", space.Params{R: 1, U: 1, W: 8, G: 64, L: 2}},
		{"r5", space.Params{R: 5, U: 1, W: 8}},
		{"w32", space.Params{R: 1, U: 1, W: 32}},
		{"a-1", space.Params{R: 1, U: 1, W: 8, A: -1}},
		{"zero", space.Params{}},
	}
	for _, tt := range tests {
		want := tt.p.Validate() == nil
		if got := paramsOK(&tt.p); got != want {
			t.Errorf("%s: paramsOK(%+v) = %v; Validate says %v", tt.name, tt.p, got, want)
		}
	}
	// Every knob over a range of values around its value set, the others
	// at stock's; and every byte value through knobBytesOK.
	m := knobMasks()
	for k := range space.Knobs {
		for v := -3; v < 300; v++ {
			p := space.Stock
			*[]*int{&p.R, &p.F, &p.U, &p.S, &p.W, &p.G, &p.L, &p.A}[k] = v
			want := p.Validate() == nil
			if got := paramsOK(&p); got != want {
				t.Fatalf("knob %s = %d: paramsOK %v; Validate %v", space.Knobs[k].Letter, v, got, want)
			}
			if v < 0 || v > 255 {
				continue
			}
			b := [7]byte{1, 0, 1, 0, 8, 0, 0}
			var g byte
			switch {
			case k == 5:
				g = byte(v)
			case k > 5:
				b[k-1] = byte(v)
			default:
				b[k] = byte(v)
			}
			if knobParams(&b, g) != p {
				t.Fatalf("knobParams(%v, %d) = %+v; want %+v", b, g, knobParams(&b, g), p)
			}
			if got := knobBytesOK(m, &b, g); got != want {
				t.Fatalf("knob %s = %d: knobBytesOK %v; Validate %v", space.Knobs[k].Letter, v, got, want)
			}
			if got := knobBytesOK(nil, &b, g); got != want {
				t.Fatalf("knob %s = %d: knobBytesOK without masks %v; Validate %v", space.Knobs[k].Letter, v, got, want)
			}
		}
	}
}

// checkSummaryRoundTrip encodes s, checks its version byte, that it decodes
// back to s, and that every cut of it is refused; it returns the bytes.
func checkSummaryRoundTrip(t *testing.T, name string, s Summary, version byte) []byte {
	t.Helper()
	b := encodeSummary(s)
	if b[0] != version {
		t.Errorf("%s: version %d; want %d", name, b[0], version)
	}
	if got, err := decodeSummary(b, nil); err != nil || got != s {
		t.Errorf("%s: round trip = %+v, %v\nwant %+v", name, got, err, s)
	}
	for n := 0; n < len(b); n++ {
		if _, err := decodeSummary(b[:n], nil); !errors.Is(err, ErrBadRecord) {
			t.Fatalf("%s: cut at %d: %v; want ErrBadRecord", name, n, err)
		}
	}
	return b
}

// TestSummaryPDL: a winner's PDL-chain time makes a version 5 summary (the
// version 4 layout plus the time), with or without G and an alternative;
// without it the versions stay as they were, and a negative or NaN time is
// refused.
func TestSummaryPDL(t *testing.T) {
	base := Summary{Schema: 1, Params: space.Params{R: 2, U: 2, S: 2, W: 16, L: 1, A: 1}, Class: ClassTolerance, Decision: "ring: +30 %",
		MedianUS: 5, GBs: 1900, PctCeiling: 43, Speedup: 3.9, P: 1e-12, GPUName: "NVIDIA H200", SourceHash: "abc", ToolVersion: "0.1.0", CubinHash: "ff"}
	alt := ExactSummary{Present: true, Params: space.Params{R: 4, U: 2, S: 2, W: 8, G: 2, L: 1}, Decision: "r4f0u2s2w8g2l1: +24 %",
		MedianUS: 6.1, GBs: 1600, PctCeiling: 36, Speedup: 3.2, P: 1e-11, CubinHash: "ee"}
	tests := []struct {
		name    string
		pdl     float64
		g       int
		exact   ExactSummary
		version byte
	}{
		{"pdl", 4.6, 0, ExactSummary{}, summaryVersion5},
		{"pdl, g, alternative", 4.6, 4, alt, summaryVersion5},
		{"pdl, alternative without g", 7.25, 0, ExactSummary{Present: true, Params: space.Stock, Kept: true, Decision: "kept v1", Speedup: 1, P: 1}, summaryVersion5},
		{"no pdl", 0, 0, ExactSummary{}, summaryVersion2},
		{"no pdl, g", 0, 4, alt, summaryVersion4},
	}
	for _, tt := range tests {
		s := base
		s.PDLUS, s.Params.G, s.Exact = tt.pdl, tt.g, tt.exact
		b := checkSummaryRoundTrip(t, tt.name, s, tt.version)
		var raw rawSummary // reused: a version 1 summary after it must not keep the time
		if decodeRaw(b, &raw) != nil || raw.PDLUS != tt.pdl || decodeRaw(encodeSummary(Summary{Schema: 1, Params: space.Stock, Class: ClassExact}), &raw) != nil || raw.PDLUS != 0 {
			t.Errorf("%s: a reused rawSummary kept the PDL time: %+v", tt.name, raw)
		}
	}
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
		s := base
		s.PDLUS = bad
		if _, err := decodeSummary(encodeSummary(s), nil); !errors.Is(err, ErrBadRecord) {
			t.Errorf("pdl_us %v decoded: %v", bad, err)
		}
	}
	if r := (Record{PDLUS: 4.6}); r.Summary().PDLUS != 4.6 {
		t.Error("Record.Summary drops PDLUS")
	}
}
