package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"unsafe"

	"github.com/gemvtune/gemvtune/space"
)

// TestKnobLists: the lists of knobs the C and Python sides write by hand
// (gemvtune.h's gemvtune_params, the Python module and the test drivers)
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
	c, err := os.ReadFile("testdata/abi_check.c")
	if err != nil {
		t.Fatal(err)
	}
	var fields []string
	for _, k := range space.Knobs {
		fields = append(fields, "c->params."+k.Letter)
	}
	if !strings.Contains(strings.Join(strings.Fields(string(c)), ""), strings.Join(fields, ",")) {
		t.Errorf("abi_check.c does not print the knobs %s in order", want.String())
	}
}
