package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune/variants"
)

// TestPythonEngineSaysWhatItLacks runs examples/python-engine/engine.py
// where it cannot run kernels (CuPy hidden behind a module that fails to
// import) and with bad arguments: each ends with exit 2 and one line that
// names the problem, never a traceback. Its list of formats must be
// gemvtune's.
func TestPythonEngineSaysWhatItLacks(t *testing.T) {
	build(t)
	py := python(t)
	if py == "" {
		t.Skip("python3 not found")
	}
	hidden := t.TempDir()
	if err := os.MkdirAll(filepath.Join(hidden, "cupy"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hidden, "cupy", "__init__.py"), []byte("raise ImportError('hidden by the test')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		says string
	}{
		{"no CuPy", nil, "CuPy"},
		{"unknown format", []string{"--formats", "q4_0,q9"}, "'q9': this engine makes weights for " + strings.Join(variants.FormatNames, ", ")},
		{"bad shape", []string{"--shapes", "4096x"}, "--shapes: '4096x': want ROWSxCOLS"},
		{"zero rows", []string{"--shapes", "0x4096"}, "rows and cols must be positive"},
		{"no rounds", []string{"--rounds", "0"}, "--rounds 0"},
		{"no layers", []string{"--chain", "--layers", "0"}, "--layers 0: want at least 1"},
		{"missing library", []string{"--lib", filepath.Join(hidden, "none.so")}, "libgemvtune: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"../examples/python-engine/engine.py", "--lib", built.lib}, tt.args...)
			cmd := exec.Command(py, args...)
			cmd.Env = append(childEnv(t, nil), "PYTHONPATH="+hidden)
			refusesInOneLine(t, cmd, "engine.py: ", tt.says)
		})
	}
}

// refusesInOneLine runs an example engine's cmd and wants exit 2 and one
// line of output that starts with prefix and says says: no traceback or
// panic.
func refusesInOneLine(t *testing.T, cmd *exec.Cmd, prefix, says string) {
	t.Helper()
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("exit %v, want 2:\n%s", err, out)
	}
	msg := strings.TrimRight(string(out), "\n")
	if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, prefix) {
		t.Errorf("want one line starting %q, got:\n%s", prefix, out)
	}
	if !strings.Contains(msg, says) {
		t.Errorf("%q does not say %q", msg, says)
	}
}
