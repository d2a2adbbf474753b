package space_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune/space"
)

func TestParseShape(t *testing.T) {
	tests := []struct {
		in      string
		want    space.Shape
		wantErr string // substring of the error; "" = no error
	}{
		{"4096x14336", space.Shape{Rows: 4096, Cols: 14336}, ""},
		{"1x1", space.Shape{Rows: 1, Cols: 1}, ""},
		{"2147483647x32", space.Shape{Rows: 2147483647, Cols: 32}, ""},
		{"", space.Shape{}, "want ROWSxCOLS"},
		{"4096", space.Shape{}, "want ROWSxCOLS"},
		{"4096X4096", space.Shape{}, "want ROWSxCOLS"},
		{"4096x4096x2", space.Shape{}, "want ROWSxCOLS"},
		{"x4096", space.Shape{}, "rows missing"},
		{"4096x", space.Shape{}, "cols missing"},
		{"0x4096", space.Shape{}, "rows must be positive"},
		{"4096x0", space.Shape{}, "cols must be positive"},
		{"-1x4096", space.Shape{}, "not a positive decimal"},
		{"+1x4096", space.Shape{}, "not a positive decimal"},
		{" 1x4096", space.Shape{}, "not a positive decimal"},
		{"0128x4096", space.Shape{}, "leading zero"},
		{"2147483648x1", space.Shape{}, "larger than"},
		{"99999999999999999999999x1", space.Shape{}, "larger than"},
	}
	for _, tt := range tests {
		got, err := space.ParseShape(tt.in)
		if tt.wantErr == "" {
			if err != nil || got != tt.want {
				t.Errorf("ParseShape(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
			if got.String() != tt.in {
				t.Errorf("ParseShape(%q).String() = %q", tt.in, got.String())
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("ParseShape(%q) error = %v; want it to contain %q", tt.in, err, tt.wantErr)
		}
		if !errors.Is(err, space.ErrBadShape) {
			t.Errorf("ParseShape(%q) error %v is not ErrBadShape", tt.in, err)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseShape(%q) error has several lines: %q", tt.in, err)
		}
	}
}

func TestShapeValidate(t *testing.T) {
	for _, s := range []space.Shape{{0, 1}, {1, -3}, {space.MaxDim + 1, 1}} {
		if err := s.Validate(); !errors.Is(err, space.ErrBadShape) {
			t.Errorf("%v.Validate() = %v; want ErrBadShape", s, err)
		}
	}
	if err := (space.Shape{Rows: 3, Cols: 5}).Validate(); err != nil {
		t.Errorf("3x5: %v", err)
	}
}

func FuzzParseShape(f *testing.F) {
	for _, s := range []string{"4096x14336", "1x1", "0x0", "x", "12x", "2147483648x1", "01x2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sh, err := space.ParseShape(s)
		if err != nil {
			if !errors.Is(err, space.ErrBadShape) {
				t.Fatalf("error %v is not ErrBadShape", err)
			}
			return
		}
		if sh.String() != s {
			t.Fatalf("ParseShape(%q).String() = %q", s, sh.String())
		}
		if err := sh.Validate(); err != nil {
			t.Fatalf("parsed shape %v does not validate: %v", sh, err)
		}
	})
}
