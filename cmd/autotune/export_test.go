package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune/cache"
)

func TestExportImportCommands(t *testing.T) {
	stale := testRecord(t, "sm_90", "q8_0", 1024, 4096, "r2f0u1s0w8")
	stale.ToolVersion = "0.0.1"
	src := cacheWith(t, testRecord(t, "sm_90", "q4_0", 4096, 14336, "r2f3u1s0w8"), testRecord(t, "sm_80", "bf16", 4096, 4096, "r4f0u2s0w8"), stale)
	var out, errOut bytes.Buffer
	if err := exportMain([]string{"--cache", src}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	e, err := cache.ReadExport(bytes.NewReader(out.Bytes()))
	if err != nil || len(e.Records) != 3 || len(e.Cubins) != 3 {
		t.Fatalf("export: %v, %+v", err, e)
	}
	file := filepath.Join(t.TempDir(), "tune.json")
	if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "dst.db")
	out.Reset()
	if err := importMain([]string{file, "--cache", dst}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "3 added, 0 replaced, 0 kept, 0 conflicts, 0 skipped") {
		t.Errorf("import output: %s", out.String())
	}
	out.Reset()
	if err := importMain([]string{"--cache", dst, file}, &out, &errOut); err != nil || !strings.Contains(out.String(), "3 kept") {
		t.Errorf("second import: %v %s", err, out.String())
	}

	out.Reset()
	if err := exportMain([]string{"--cache", src, "--arch", "sm_90", "--header"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	h := out.String()
	if !strings.Contains(h, `{"sm_90", "h200", "q4_0", 4096, 14336, 2, 3, 1, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}`) || strings.Contains(h, "sm_80") ||
		strings.Contains(h, "q8_0") || !strings.Contains(h, "#define GEMVTUNE_VARIANTS_LEN 1") {
		t.Errorf("header (sm_90, stale left out):\n%s", h)
	}
	if !strings.Contains(errOut.String(), "left out 1 stale record(s): tuned by autotune 0.0.1") {
		t.Errorf("export --header did not say what it left out: %q", errOut.String())
	}
}

func TestImportExportErrors(t *testing.T) {
	var out, errOut bytes.Buffer
	var u usageError
	if err := importMain(nil, &out, &errOut); !errors.As(err, &u) {
		t.Errorf("import without FILE: %v", err)
	}
	if err := importMain([]string{"a.json", "b.json"}, &out, &errOut); !errors.As(err, &u) {
		t.Errorf("import with two files: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"kind":"something else"}`), 0o644)
	if err := importMain([]string{bad, "--cache", filepath.Join(t.TempDir(), "x.db")}, &out, &errOut); err == nil || !strings.Contains(err.Error(), "kind") {
		t.Errorf("import of a foreign file: %v", err)
	}
	if err := exportMain([]string{"--arch", "sm9"}, &out, &errOut); !errors.As(err, &u) {
		t.Errorf("export --arch sm9: %v", err)
	}
	if err := exportMain([]string{"--help"}, &out, &errOut); err != nil || !strings.Contains(errOut.String(), "usage: autotune export") {
		t.Errorf("export --help: %v", err)
	}
}
