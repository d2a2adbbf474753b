package cache_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/space"
)

func TestExportImport(t *testing.T) {
	src, _ := openWriter(t)
	rng := newRNG(t)
	a := randomRecord(rng, "sm_90", "q4_0", 4096, 4096)
	b := randomRecord(rng, "sm_80", "q8_0", 4096, 14336)
	for _, r := range []cache.Record{a, b} {
		if err := src.Put(r, []byte("cubin "+r.Key.String())); err != nil {
			t.Fatal(err)
		}
	}
	e, err := src.Export("")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := e.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := cache.ReadExport(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("ReadExport: %v", err)
	}
	if !reflect.DeepEqual(back.Records, e.Records) || !reflect.DeepEqual(back.Cubins, e.Cubins) || len(back.Cubins) != 2 {
		t.Fatalf("export does not round-trip through JSON")
	}
	only90, err := src.Export("sm_90")
	if err != nil || len(only90.Records) != 1 || len(only90.Cubins) != 1 {
		t.Errorf("Export(sm_90) = %d records, %d cubins, %v; want 1, 1", len(only90.Records), len(only90.Cubins), err)
	}

	dst, _ := openWriter(t)
	s, err := dst.Import(back)
	if err != nil || s.Added != 2 || s.String() != "2 added, 0 replaced, 0 kept, 0 conflicts, 0 skipped" {
		t.Fatalf("first import: %v, %v", s, err)
	}
	got, err := dst.All("")
	if err != nil || !reflect.DeepEqual(got, e.Records) {
		t.Fatalf("imported records differ: %v", err)
	}
	if c, err := dst.Cubin(got[0].CubinHash); err != nil || !bytes.HasPrefix(c, []byte("cubin ")) {
		t.Errorf("imported cubin: %q, %v", c, err)
	}
	if s, err := dst.Import(back); err != nil || s.Kept != 2 || s.Added+s.Replaced != 0 {
		t.Errorf("same import again: %v, %v; want 2 kept", s, err)
	}

	// Newer from the same GPU replaces; another GPU conflicts; a bad cubin is skipped.
	newer := *back
	newer.Records = append([]cache.Record(nil), back.Records...)
	newer.Records[0].Time = newer.Records[0].Time.Add(time.Hour)
	newer.Records[0].MedianUS *= 0.9
	newer.Records[1].GPUName = "NVIDIA H100 80GB HBM3"
	newer.Records[1].Time = newer.Records[1].Time.Add(time.Hour)
	c := randomRecord(rng, "sm_90", "bf16", 1024, 4096)
	c.Schema, c.CubinHash = cache.SchemaVersion, cache.CubinHash([]byte("real"))
	newer.Cubins = map[string][]byte{c.CubinHash: []byte("forged")}
	for k, v := range back.Cubins {
		newer.Cubins[k] = v
	}
	d := randomRecord(rng, "sm_90", "q4_K", 1024, 4096)
	d.Schema = 3
	newer.Records = append(newer.Records, c, d)
	s, err = dst.Import(&newer)
	if err != nil || s.Replaced != 1 || len(s.Conflicts) != 1 || len(s.Skipped) != 2 || s.Added != 0 {
		t.Fatalf("merge import: %+v, %v; want 1 replaced, 1 conflict, 2 skipped", s, err)
	}
	if cf := s.Conflicts[0]; cf.Ours != "NVIDIA H200" || cf.Theirs != "NVIDIA H100 80GB HBM3" {
		t.Errorf("conflict = %+v", cf)
	}
	r0, _ := dst.Get(newer.Records[0].Key)
	if r0.MedianUS != newer.Records[0].MedianUS {
		t.Errorf("newer measurement not stored: %v", r0.MedianUS)
	}
	r1, _ := dst.Get(newer.Records[1].Key)
	if r1.GPUName != "NVIDIA H200" {
		t.Errorf("conflict overwrote ours: %q", r1.GPUName)
	}

	ro, err := cache.Open(dst.Path(), &cache.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ro.Import(back); !errors.Is(err, cache.ErrReadOnly) {
		t.Errorf("Import on read-only: %v", err)
	}
}

func TestReadExportErrors(t *testing.T) {
	for _, in := range []string{"", "garbage", `{"kind":"other","version":1}`, `{"kind":"gemvtune-cache-export","version":9}`, `{"kind":"gemvtune-cache-export","version":1,"records":[{"schema":"x"}]}`} {
		if _, err := cache.ReadExport(strings.NewReader(in)); err == nil {
			t.Errorf("ReadExport(%q) = nil error", in)
		}
	}
}

func TestCHeaderCompiles(t *testing.T) {
	rng := newRNG(t)
	recs := []cache.Record{randomRecord(rng, "sm_90", "q4_0", 4096, 14336), randomRecord(rng, "sm_90", "bf16", 128256, 4096),
		withG(toleranceWithExact(t, "sm_90", "q8_0", 4096, 4096, false), 8, 128)}
	recs[0].Decision = "tricky */ comment /* here\n"
	recs[2].Params = space.Params{R: 2, F: 1, U: 4, S: 1, W: 16, G: 8, L: 1, A: 1}
	recs[2].WinnerID = recs[2].Params.ID()
	var buf bytes.Buffer
	if err := cache.WriteCHeader(&buf, recs); err != nil {
		t.Fatal(err)
	}
	p := recs[0].Params
	row := fmt.Sprintf(`{"sm_90", "h200", "q4_0", 4096, 14336, %d, %d, %d, %d, %d, %d, %d, %d, `, p.R, p.F, p.U, p.S, p.W, p.G, p.L, p.A)
	// rows ... w g l a, exact, has_exact_alt, xr ... xw xg xl xa
	rowG := `{"sm_90", "h200", "q8_0", 4096, 4096, 2, 1, 4, 1, 16, 8, 1, 1, 0, 1, 4, 2, 2, 0, 8, 128, 0, 0}, /* `
	for _, want := range []string{row, rowG, "int r, f, u, s, w, g, l, a;", "int xr, xf, xu, xs, xw, xg, xl, xa;", "#define GEMVTUNE_HEADER_VERSION 4",
		"g row groups per block, 0 = 1: grid = ceil(ceil(rows/(r*w)) / max(g,1))"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("header lacks %q:\n%s", want, buf.String())
		}
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler here to check the header compiles")
	}
	dir := t.TempDir()
	h := filepath.Join(dir, "tuned.h")
	c := filepath.Join(dir, "main.c")
	os.WriteFile(h, buf.Bytes(), 0o644)
	os.WriteFile(c, []byte("#include \"tuned.h\"\nint main(void){ return gemvtune_variants[GEMVTUNE_VARIANTS_LEN].arch == 0 && gemvtune_variants[1].rows == 128256 && gemvtune_variants[2].g == 8 && gemvtune_variants[2].xg == 128 && gemvtune_variants[2].xa == 0 ? 0 : 1; }\n"), 0o644)
	exe := filepath.Join(dir, "main")
	if out, err := exec.Command(cc, "-std=c99", "-Wall", "-Werror", "-o", exe, c).CombinedOutput(); err != nil {
		t.Fatalf("header does not compile: %v\n%s\n%s", err, out, buf.String())
	}
	if err := exec.Command(exe).Run(); err != nil {
		t.Errorf("header table wrong: %v", err)
	}
}
