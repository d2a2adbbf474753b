package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune/cache"
)

// captureStderr runs fn with os.Stderr going to a pipe and returns what
// was written there.
func captureStderr(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stderr
	os.Stderr = w
	done := make(chan string)
	go func() { b, _ := io.ReadAll(r); done <- string(b) }()
	fn()
	os.Stderr = old
	w.Close()
	return <-done
}

// TestOneLineUsageErrors: an unknown flag, command or argument is one line
// on stderr (the caller prints the returned error) and exit 2.
func TestOneLineUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"doctor", "--frob"}, {"lookup", "--frob"}, {"show", "--frob"}, {"export", "--frob"}, {"import", "--frob"},
		{"bench", "--frob"}, {"compare", "--frob"}, {"report", "--frob"}, {"frobnicate"}, {"help", "frobnicate"},
		{"doctor", "extra"}, {"show", "a", "b"},
	} {
		var err error
		printed := captureStderr(t, func() { err = dispatch(context.Background(), args) })
		var u usageError
		if !errors.As(err, &u) || strings.Contains(err.Error(), "\n") || printed != "" {
			t.Errorf("%v: error %q (usage %v), printed %q; want one usage line and nothing printed", args, err, errors.As(err, &u), printed)
		}
	}
	// import takes its file before or after the flags; "-" is standard input.
	cache := filepath.Join(dir, "x.db")
	err := dispatch(context.Background(), []string{"import", filepath.Join(dir, "missing.json"), "--cache", cache})
	if err == nil || !strings.Contains(err.Error(), "missing.json") || strings.Contains(err.Error(), "one FILE") {
		t.Errorf("import FILE --cache: %v", err)
	}
}

func TestHelpOfACommand(t *testing.T) {
	var err error
	printed := captureStderr(t, func() { err = dispatch(context.Background(), []string{"help", "export"}) })
	if err != nil || !strings.Contains(printed, "autotune export") {
		t.Errorf("help export: %v, printed %q", err, printed)
	}
}

func TestVersion(t *testing.T) {
	v := versionLine()
	for _, want := range []string{"autotune 0.", "cache layout 2", "record schema 2", "gemvtune-kernels/", "go1."} {
		if !strings.Contains(v, want) {
			t.Errorf("version line %q lacks %q", v, want)
		}
	}
}

// TestImportSaysWhatItTakes: a tune's --json output (what docs/data
// holds) gets a line naming what import takes; records nothing can look up
// are skipped with their reason.
func TestImportSaysWhatItTakes(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run.json")
	if err := os.WriteFile(run, []byte(`[{"arch":"sm_90"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	err := dispatch(context.Background(), []string{"import", run, "--cache", filepath.Join(dir, "c.db")})
	if err == nil || !strings.Contains(err.Error(), "autotune --json") || !strings.Contains(err.Error(), "autotune export") {
		t.Errorf("import of a run: %v", err)
	}
	keep, skipped := lookableRecords([]cache.Record{
		{Key: cache.Key{Arch: "sm_90", Format: "q4_0"}}, {Key: cache.Key{Arch: "sm_90", Format: "foo"}},
		{Key: cache.Key{Arch: "sm_999", Format: "q4_0"}},
	})
	if len(keep) != 1 || len(skipped) != 2 || !strings.Contains(skipped[0], `format "foo"`) || !strings.Contains(skipped[1], "arch sm_999") {
		t.Errorf("lookable: %d kept, skipped %q", len(keep), skipped)
	}
}

// TestDryRunJSON: --dry-run --json prints the plan as JSON, not the table.
func TestDryRunJSON(t *testing.T) {
	var out, errw bytes.Buffer
	err := tuneMain(context.Background(), []string{"--arch", "sm_70", "--shapes", "4096x4096", "--formats", "q4_0", "--dry-run", "--json"}, &out, &errw)
	if err != nil {
		t.Fatal(err)
	}
	var plans []struct {
		Arch string           `json:"arch"`
		Jobs []map[string]any `json:"jobs"`
	}
	if err := json.Unmarshal(out.Bytes(), &plans); err != nil || len(plans) != 1 || plans[0].Arch != "sm_70" || len(plans[0].Jobs) != 1 {
		t.Fatalf("--dry-run --json: %v\n%s", err, out.String())
	}
	if strings.Contains(out.String(), "s=N") || strings.Contains(out.String(), "sm_N") {
		t.Errorf("the plan lost names or knob values:\n%s", out.String())
	}
}

// TestFlagNamesAlike: --format and --formats (and --shape, --shapes) are
// the same flag for tune and bench.
func TestFlagNamesAlike(t *testing.T) {
	for _, args := range [][]string{
		{"--arch", "sm_90", "--format", "q4_0", "--shape", "4096x4096", "--dry-run"},
		{"--arch", "sm_90", "--formats", "q4_0", "--shapes", "4096x4096", "--dry-run"},
	} {
		var out, errw bytes.Buffer
		if err := tuneMain(context.Background(), args, &out, &errw); err != nil || !strings.Contains(out.String(), "q4_0    4096x4096") {
			t.Errorf("%v: %v\n%s", args, err, out.String())
		}
	}
	for _, args := range [][]string{{"--formats", "q9"}, {"--format", "q9"}} {
		err := benchMain(context.Background(), args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "q9") {
			t.Errorf("bench %v: %v", args, err)
		}
	}
}

// TestCompletion: each shell's script names the commands, the flags and
// the formats, and bash accepts its script.
func TestCompletion(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		var out bytes.Buffer
		if err := completionMain([]string{sh}, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"doctor", "lookup", "formats", "q4_K", "llama-3-8b", "sm_90"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s script lacks %q", sh, want)
			}
		}
		if sh == "bash" {
			if bash, err := exec.LookPath("bash"); err == nil {
				cmd := exec.Command(bash, "-n")
				cmd.Stdin = &out
				if b, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("bash -n: %v\n%s", err, b)
				}
			}
		}
	}
	if err := completionMain([]string{"tcsh"}, io.Discard, io.Discard); err == nil {
		t.Error("tcsh accepted")
	}
}

// An error a signal caused names the signal; others stay as they are.
func TestStopped(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	plain := errors.New("bench: no GPU")
	canceled := fmt.Errorf("bench --chain --refine q4_0: timing the token: %w", context.Canceled)
	if got := stopped(ctx, canceled); got != canceled {
		t.Errorf("before the signal: %v", got)
	}
	cancel(errors.New("terminated signal received"))
	if got := stopped(ctx, plain); got != plain {
		t.Errorf("an error of its own: %v", got)
	}
	if got := stopped(ctx, nil); got != nil {
		t.Errorf("no error: %v", got)
	}
	want := "bench --chain --refine q4_0: timing the token: context canceled (terminated signal received)"
	if got := stopped(ctx, canceled); got == nil || got.Error() != want || !errors.Is(got, context.Canceled) {
		t.Errorf("got %v, want %s", got, want)
	}
}

// TestHelpCommandsAligned: every command's description in autotune --help
// starts in the same column, the longest name's included.
func TestHelpCommandsAligned(t *testing.T) {
	var b strings.Builder
	printHelp(&b)
	lines := map[string]string{} // the listed lines by command name
	for _, line := range strings.Split(b.String(), "\n") {
		if name, _, ok := strings.Cut(strings.TrimPrefix(line, "  "), " "); ok && strings.HasPrefix(line, "  ") && commands[name] != nil {
			lines[name] = line
		}
	}
	col := -1
	for _, name := range commandNames() {
		line, ok := lines[name]
		if !ok {
			t.Fatalf("%s missing from the help:\n%s", name, b.String())
		}
		desc := strings.Index(line, commands[name].short)
		if desc <= len("  "+name) {
			t.Errorf("%q: the description does not follow the name", line)
		}
		if col >= 0 && desc != col {
			t.Errorf("%q: description at column %d, the others at %d", line, desc, col)
		}
		col = desc
	}
}
