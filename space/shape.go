package space

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// ErrBadShape is returned (wrapped) when a shape does not parse.
var ErrBadShape = errors.New("invalid shape")

// MaxDim is the largest number of rows or columns a shape may have: kernels
// take rows and cols as 32-bit ints.
const MaxDim = math.MaxInt32

// Shape is the shape of a weight matrix W: Rows outputs by Cols inputs
// (docs/design.md §3). It is written "ROWSxCOLS", e.g. "4096x14336".
type Shape struct {
	Rows int
	Cols int
}

// String returns the shape as "ROWSxCOLS"; it parses back with ParseShape.
func (s Shape) String() string {
	return strconv.Itoa(s.Rows) + "x" + strconv.Itoa(s.Cols)
}

// Validate checks that both dimensions are in 1..MaxDim.
func (s Shape) Validate() error {
	if s.Rows < 1 || s.Cols < 1 {
		return badf(ErrBadShape, "shape %s: rows and cols must be positive", s)
	}
	if s.Rows > MaxDim || s.Cols > MaxDim {
		return badf(ErrBadShape, "shape %s: rows and cols must be at most %d", s, MaxDim)
	}
	return nil
}

// ParseShape reads "ROWSxCOLS" (decimal, no sign, no leading zeros, a
// lowercase x), e.g. "4096x14336". Both dimensions must be in 1..MaxDim.
func ParseShape(s string) (Shape, error) {
	x := -1
	for i := 0; i < len(s); i++ {
		if s[i] == 'x' {
			if x >= 0 {
				x = -2
				break
			}
			x = i
		}
	}
	if x < 0 {
		return Shape{}, badf(ErrBadShape, "shape %q: want ROWSxCOLS, e.g. 4096x14336", s)
	}
	rows, err := parseDim(s[:x])
	if err != nil {
		return Shape{}, badf(ErrBadShape, "shape %q: rows %v", s, err)
	}
	cols, err := parseDim(s[x+1:])
	if err != nil {
		return Shape{}, badf(ErrBadShape, "shape %q: cols %v", s, err)
	}
	return Shape{Rows: rows, Cols: cols}, nil
}

// parseDim reads one dimension; its error completes "rows ..." or "cols ...".
func parseDim(d string) (int, error) {
	if d == "" {
		return 0, errors.New("missing: want ROWSxCOLS, e.g. 4096x14336")
	}
	n := 0
	for i := 0; i < len(d); i++ {
		c := d[i]
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%q is not a positive decimal number", d)
		}
		n = n*10 + int(c-'0')
		if n > MaxDim {
			return 0, fmt.Errorf("%s is larger than %d", d, MaxDim)
		}
	}
	switch {
	case n == 0:
		return 0, errors.New("must be positive")
	case d[0] == '0':
		return 0, fmt.Errorf("%q has a leading zero", d)
	}
	return n, nil
}

// parseError is a one-line message that matches its kind (ErrBadShape,
// ErrBadArch) with errors.Is without repeating the kind's text.
type parseError struct {
	msg  string
	kind error
}

func (e *parseError) Error() string { return e.msg }
func (e *parseError) Unwrap() error { return e.kind }

func badf(kind error, format string, a ...any) error {
	return &parseError{msg: fmt.Sprintf(format, a...), kind: kind}
}
