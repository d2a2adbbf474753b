package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"unsafe"

	"github.com/gemvtune/gemvtune/space"
)

// TestKnobLists: the lists of knobs the C, Python and Rust sides write by
// hand (gemvtune.h's gemvtune_params, the Python module, the Rust crate's
// gemvtune_params and the test drivers)
// are space.Knobs' letters in order, so a new knob cannot be forgotten
// there.
func TestKnobLists(t *testing.T) {
	var want strings.Builder
	for _, k := range space.Knobs {
		want.WriteString(k.Letter)
	}
	hdr, err := os.ReadFile("gemvtune.h")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`typedef struct gemvtune_params \{\s*int32_t ([a-z, ]+);`).FindSubmatch(hdr)
	if m == nil {
		t.Fatal("gemvtune.h: no gemvtune_params")
	}
	if got := strings.ReplaceAll(string(m[1]), ", ", ""); got != want.String() {
		t.Errorf("gemvtune_params fields %q, space.Knobs %q", got, want.String())
	}
	if n := int(unsafe.Sizeof(paramsOfC()) / 4); n != len(space.Knobs) {
		t.Errorf("gemvtune_params holds %d knobs, space.Knobs %d", n, len(space.Knobs))
	}
	for _, f := range []string{"../bindings/python/gemvtune.py", "../bindings/python/abi_driver.py"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), `"`+want.String()+`"`); n == 0 {
			t.Errorf("%s does not list the knobs as %q", f, want.String())
		}
	}
	rs, err := os.ReadFile("../bindings/rust/src/sys.rs")
	if err != nil {
		t.Fatal(err)
	}
	m = regexp.MustCompile(`pub struct gemvtune_params \{([^}]*)\}`).FindSubmatch(rs)
	if m == nil {
		t.Fatal("bindings/rust/src/sys.rs: no gemvtune_params")
	}
	var got strings.Builder
	for _, f := range regexp.MustCompile(`pub ([a-z]+): i32`).FindAllSubmatch(m[1], -1) {
		got.Write(f[1])
	}
	if got.String() != want.String() {
		t.Errorf("the Rust gemvtune_params fields %q, space.Knobs %q", got.String(), want.String())
	}
	for _, d := range []struct{ file, prefix string }{
		{"testdata/abi_check.c", "c->params."},
		{"../bindings/rust/examples/abi_driver.rs", "p."},
	} {
		b, err := os.ReadFile(d.file)
		if err != nil {
			t.Fatal(err)
		}
		var fields []string
		for _, k := range space.Knobs {
			fields = append(fields, d.prefix+k.Letter)
		}
		if !strings.Contains(strings.Join(strings.Fields(string(b)), ""), strings.Join(fields, ",")) {
			t.Errorf("%s does not print the knobs %s in order", d.file, want.String())
		}
	}
}
