package main

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune/internal/gpu"
	"github.com/gemvtune/gemvtune/variants"
)

// TestRustUnitTests runs the Rust crates' own tests against the library:
// the bindings' (errors carry the status and a message, a failed lookup the
// stock choice, the reference of a block worked by hand) and the engine's
// (its weights are finite rows of about unit norm in every format).
func TestRustUnitTests(t *testing.T) {
	if _, engine := rustBuilt(t); engine == "" {
		t.Skip("cargo not found")
	}
	for _, manifest := range []string{"../bindings/rust/Cargo.toml", "../examples/rust-engine/Cargo.toml"} {
		if out, err := cargoIn(manifest, "test"); err != nil {
			t.Errorf("cargo test on %s: %v\n%s", manifest, err, out)
		}
	}
}

// TestRustEngineSaysWhatItLacks runs examples/rust-engine with bad
// arguments and, where this machine has no NVIDIA driver, with none: each
// ends with exit 2 and one line that names the problem. Its list of
// formats must be gemvtune's.
func TestRustEngineSaysWhatItLacks(t *testing.T) {
	_, engine := rustBuilt(t)
	if engine == "" {
		t.Skip("cargo not found")
	}
	tests := []struct {
		name string
		args []string
		says string
	}{
		{"unknown format", []string{"--formats", "q4_0,q9"}, `"q9": this engine makes weights for ` + strings.Join(variants.FormatNames, ", ")},
		{"too few rounds", []string{"--rounds", "1"}, "--rounds 1: want a whole number of at least 3"},
		{"no layers", []string{"--layers", "0"}, "--layers 0: want a whole number of at least 1"},
		{"flag without value", []string{"--layers"}, "--layers: wants a value"},
		{"unknown flag", []string{"--shapes", "1x1"}, "--shapes: unknown flag"},
		{"no driver", nil, "no NVIDIA driver (libcuda.so.1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.args == nil {
				if d, err := gpu.Open(0); !errors.Is(err, gpu.ErrNoDriver) {
					if err == nil {
						d.Close()
					}
					t.Skip("this machine has an NVIDIA driver: the engine would run")
				}
			}
			cmd := exec.Command(engine, tt.args...)
			cmd.Env = childEnv(t, nil)
			refusesInOneLine(t, cmd, "rust-engine: ", tt.says)
		})
	}
}
