package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune/tuner"
)

func TestCompare(t *testing.T) {
	cand := func(id string, med, lo, hi float64) tuner.Candidate {
		return tuner.Candidate{ID: id, Status: tuner.StatusOK, MedianUS: med, LoUS: lo, HiUS: hi}
	}
	job := func(f string) tuner.Job { return tuner.Job{Format: f, Rows: 4096, Cols: 4096} }
	a := []tuner.Decision{
		{Arch: "sm_90", Job: job("q4_0"), Winner: cand("r2f0u1s0w8", 10, 9.9, 10.1)},
		{Arch: "sm_90", Job: job("q8_0"), Winner: cand("r2f0u1s0w8", 10, 9.9, 10.1), Candidates: []tuner.Candidate{cand("r4f0u1s0w8", 11, 10.9, 11.1)}},
		{Arch: "sm_90", Job: job("bf16"), Winner: cand("r1f0u2s0w8", 10, 9.8, 10.2)},
		{Arch: "sm_90", Job: job("q4_K"), Winner: cand("r1f0u1s1w8", 10, 9.9, 10.1)},
		{Arch: "sm_90", Job: job("q6_K"), Winner: cand("r1f0u1s3w8", 10, 9.95, 10.05), Candidates: []tuner.Candidate{cand("r1f0u2s3w8", 10.4, 10.35, 10.45)}},
	}
	b := []tuner.Decision{
		{Arch: "sm_90", Job: job("q4_0"), Winner: cand("r2f0u1s0w8", 10.05, 9.9, 10.1), Batches: 100, ExhaustiveBatches: 400},
		{Arch: "sm_90", Job: job("q8_0"), Winner: cand("r4f0u1s0w8", 10.5, 10.4, 10.6), Batches: 50, ExhaustiveBatches: 200},
		{Arch: "sm_90", Job: job("bf16"), Winner: cand("r1f0u4s0w8", 10.1, 9.9, 10.3)},
		{Arch: "sm_90", Job: job("q4_K"), Winner: cand("r1f0u2s2w8", 8.5, 8.4, 8.6)}, // not timed in A
		// Each run times both picks and has its own ahead, intervals apart.
		{Arch: "sm_90", Job: job("q6_K"), Winner: cand("r1f0u2s3w8", 10.2, 10.15, 10.25), Candidates: []tuner.Candidate{cand("r1f0u1s3w8", 10.7, 10.65, 10.75)}},
	}
	dir := t.TempDir()
	write := func(name string, ds []tuner.Decision) string {
		p := filepath.Join(dir, name)
		data, _ := json.Marshal(ds)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A gzipped output reads the same.
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	data, _ := json.Marshal(a)
	zw.Write(data)
	zw.Close()
	aGz := filepath.Join(dir, "a.json.gz")
	if err := os.WriteFile(aGz, zb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := compareMain([]string{aGz, write("b.json", b)}, &out, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"same", "10.0 % slower", "15.0 % faster", "equivalent", "5 jobs in both runs", "at most 10.0 %",
		"runs disagree: A has B's pick +4.0 %, B has A's +4.9 %",
		"B's winners: 1 the same, 1 equivalent, 1 where the runs disagree, 1 faster, 0 slower by 2 % or less, 1 slower by more than 2 %",
		"B timed 150 batches in 2 jobs: 25.0 % of the 600 exhaustive search would have timed"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "\nA timed") {
		t.Errorf("A records no batches, yet a line counts them:\n%s", got)
	}
	// Across machines: B's machine reads 5 % faster, so B's winner, 10 %
	// faster in µs, is 5.5 % faster per ceiling (9·4200 / 10·4000); per read
	// (9/9 against 10/8) 20 % faster. The kernels changed for q4_0 only, and
	// the closing line says so.
	a2 := []tuner.Decision{
		{Arch: "sm_90", Job: job("q4_0"), Winner: cand("r2f0u1s0w8", 10, 9.9, 10.1), CeilingGBs: 4000, ReadUS: 8, SourceHash: "aaaa"},
		{Arch: "sm_90", Job: job("bf16"), Winner: cand("r1f0u2s0w8", 10, 9.8, 10.2), CeilingGBs: 4000, SourceHash: "cccc"},
	}
	b2 := []tuner.Decision{
		{Arch: "sm_90", Job: job("q4_0"), Winner: cand("r2f0u1s0w8", 9, 8.9, 9.1), CeilingGBs: 4200, ReadUS: 9, SourceHash: "bbbb"},
		{Arch: "sm_90", Job: job("bf16"), Winner: cand("r1f0u2s0w8", 10, 9.8, 10.2), CeilingGBs: 4000, SourceHash: "cccc"},
	}
	out.Reset()
	if err := compareMain([]string{write("a2.json", a2), write("b2.json", b2)}, &out, &out); err != nil {
		t.Fatal(err)
	}
	got = out.String()
	for _, want := range []string{"PER CEILING", "-5.5 %", "-20.0 %", "kernel sources differ between the runs for q4_0:"} {
		if !strings.Contains(got, want) {
			t.Errorf("cross-machine output lacks %q:\n%s", want, got)
		}
	}
	for _, line := range strings.Split(got, "\n") {
		if strings.Contains(line, "bf16") && !strings.HasSuffix(strings.TrimSpace(line), "-") {
			t.Errorf("bf16 has no same-bytes read, want PER READ \"-\": %q", line)
		}
	}
	if strings.Contains(got, "q4_0, bf16") {
		t.Errorf("bf16's kernels did not change:\n%s", got)
	}
	garbage := filepath.Join(dir, "g.json")
	os.WriteFile(garbage, []byte("{"), 0o644)
	if err := compareMain([]string{garbage, garbage}, &out, &out); err == nil || strings.Contains(err.Error(), "\n") {
		t.Errorf("garbage input: %v", err)
	}
	if err := compareMain([]string{garbage}, &out, &out); err == nil {
		t.Error("one file accepted")
	}
}
