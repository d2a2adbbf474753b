package space

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// TestKnobFields: every field of Params is exactly one knob, and a knob
// reads and sets its own field only.
func TestKnobFields(t *testing.T) {
	n := reflect.TypeFor[Params]().NumField()
	if n != len(Knobs) {
		t.Fatalf("Params has %d fields, Knobs %d entries", n, len(Knobs))
	}
	for i, k := range Knobs {
		p := k.With(Params{}, 7)
		v := reflect.ValueOf(p)
		for j := 0; j < n; j++ {
			if got, want := v.Field(j).Int(), int64(0); j != i && got != want {
				t.Errorf("knob %s set field %s", k.Letter, v.Type().Field(j).Name)
			}
		}
		if v.Field(i).Int() != 7 || k.Of(p) != 7 {
			t.Errorf("knob %s is not field %d (%s)", k.Letter, i, v.Type().Field(i).Name)
		}
		if strings.ToLower(v.Type().Field(i).Name) != k.Letter {
			t.Errorf("knob %s is field %s", k.Letter, v.Type().Field(i).Name)
		}
	}
	if got := ParamsOf(Stock.Values()); got != Stock {
		t.Errorf("ParamsOf(Values) = %v", got)
	}
}

// TestKnobListsDerived scans the module's Go code (tests aside) for lists
// of knobs written out by hand: Params fields side by side, the knobs'
// #define and variable names, their letters in a row. Every such list
// must come from Knobs, so that a new knob is one entry there.
func TestKnobListsDerived(t *testing.T) {
	var names []string
	for _, k := range Knobs {
		if k.Define != "" {
			names = append(names, regexp.QuoteMeta(`"`+k.Define+`"`))
		}
		if k.Env != "" {
			names = append(names, regexp.QuoteMeta(`"`+k.Env+`"`))
		}
	}
	patterns := []*regexp.Regexp{
		regexp.MustCompile(`\.R\b[^\n]{0,40}\.F\b[^\n]{0,40}\.U\b`), // p.R, p.F, p.U, ...
		regexp.MustCompile(`\bR:\s*[^,\n]+,\s*F:\s*[^,\n]+,\s*U:`),  // Params{R: .., F: .., U: ..} listing every knob
		regexp.MustCompile(strings.Join(names, "|")),                // "GEMV_R", "GEMV_UNROLL", ...
		regexp.MustCompile(`"r",\s*"f",\s*"u"`),                     // the letters in a row
		regexp.MustCompile(`case "r":[^}]*case "f":`),               // a switch over the letters
	}
	root := ".."
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != root || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || path == filepath.Join("..", "space", "params.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, re := range patterns {
			if loc := re.FindIndex(b); loc != nil {
				line := strings.Count(string(b[:loc[0]]), "\n") + 1
				t.Errorf("%s:%d: a list of knobs written out (%q): derive it from space.Knobs", path, line, b[loc[0]:loc[1]])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
