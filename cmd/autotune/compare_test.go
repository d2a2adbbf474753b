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
	}
	b := []tuner.Decision{
		{Arch: "sm_90", Job: job("q4_0"), Winner: cand("r2f0u1s0w8", 10.05, 9.9, 10.1)},
		{Arch: "sm_90", Job: job("q8_0"), Winner: cand("r4f0u1s0w8", 10.5, 10.4, 10.6)},
		{Arch: "sm_90", Job: job("bf16"), Winner: cand("r1f0u4s0w8", 10.1, 9.9, 10.3)},
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
	for _, want := range []string{"same", "+10.0 % slower", "equivalent", "3 jobs in both runs", "at most 10.0 %"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
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
