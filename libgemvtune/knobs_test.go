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
// (gemvtune.h's gemvtune_params and the choice's tail, the Python module
// and the test drivers) are space.Knobs' letters in order, abi 1.0's in
// gemvtune_params and abiTailKnob after them, so a new knob cannot be
// forgotten there.
func TestKnobLists(t *testing.T) {
	var params strings.Builder
	for _, k := range space.Knobs {
		if k.Letter != abiTailKnob {
			params.WriteString(k.Letter)
		}
	}
	hdr, err := os.ReadFile("gemvtune.h")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`typedef struct gemvtune_params \{\s*int32_t ([a-z, ]+);`).FindSubmatch(hdr)
	if m == nil {
		t.Fatal("gemvtune.h: no gemvtune_params")
	}
	if got := strings.ReplaceAll(string(m[1]), ", ", ""); got != params.String() {
		t.Errorf("gemvtune_params fields %q, space.Knobs less %s %q", got, abiTailKnob, params.String())
	}
	if n := int(unsafe.Sizeof(paramsOfC()) / 4); n != len(space.Knobs)-1 {
		t.Errorf("gemvtune_params holds %d knobs, space.Knobs %d and the tail 1", n, len(space.Knobs))
	}
	if !regexp.MustCompile(`int32_t pdl_needs_shared_optin;[^\n]*\n[^\n]*\n\s*int32_t ` + abiTailKnob + `;`).Match(hdr) {
		t.Errorf("gemvtune.h: gemvtune_choice does not end with int32_t %s after abi 1.1's fields", abiTailKnob)
	}
	want := params
	for _, f := range []string{"../bindings/python/gemvtune.py", "../bindings/python/abi_driver.py"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), `"`+want.String()+`"`); n == 0 || !strings.Contains(string(b), `"`+abiTailKnob+`"`) {
			t.Errorf("%s does not list the knobs as %q and %q", f, want.String(), abiTailKnob)
		}
	}
	c, err := os.ReadFile("testdata/abi_check.c")
	if err != nil {
		t.Fatal(err)
	}
	var fields []string
	for _, k := range want.String() {
		fields = append(fields, "c->params."+string(k))
	}
	if !strings.Contains(strings.Join(strings.Fields(string(c)), ""), strings.Join(fields, ",")) {
		t.Errorf("abi_check.c does not print the knobs %s in order", want.String())
	}
}
