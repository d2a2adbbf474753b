package variants

import (
	"fmt"
	"strings"
)

// The interleaved layout (layout knob l = 1 of q4_K and affine4, l = 2 of
// q4_0; docs/formats.md) stores each row as warp tiles: the bytes one warp reads
// in one step of the kernel (lane k takes chunk k of the tile), ordered so
// that every load the lanes issue together is one contiguous run. The raw
// layouts scatter them: a q4_K super-block is 144 bytes, so the lanes'
// 16-byte loads each use half of a 32-byte sector (Nsight Compute: 43 %
// excessive sectors), and MLX keeps scales and biases in planes of their
// own, three streams per row; q4_0's planar layout (l = 1) has two. A
// tile holds the same bytes, so the layout has exactly as many bytes as
// the raw one.

// interleaver is a Format with an interleaved layout: the weights of one
// tile (cols must be a multiple of it) and the layout's byte map.
type interleaver interface {
	Format
	tileWeights() int
	// tileRuns calls move for every run of n bytes that sits at rawOff in
	// the raw tensor and at tiledOff in the interleaved one; the runs
	// cover both exactly once, so one definition serves both directions.
	tileRuns(rows, cols int, move func(rawOff, tiledOff, n int))
}

// InterleavedTileWeights returns the weights per tile of format's
// interleaved layout (l = 1): cols must be a multiple of it. 0 when the
// format has no interleaved layout.
func InterleavedTileWeights(format string) int {
	if f, ok := formats[format].(interleaver); ok {
		return f.tileWeights()
	}
	return 0
}

// RepackInterleaved converts a raw q4_0 or q4_K (GGUF) or affine4 (MLX:
// nibble plane, scale plane, bias plane) tensor of shape [rows, cols] into
// the interleaved layout (layout knob l = 2 of q4_0, l = 1 of q4_K and
// affine4; docs/formats.md has the byte map). cols must be a multiple of
// 1024 (q4_0, affine4) or 2048 (q4_K).
func RepackInterleaved(format string, raw []byte, rows, cols int) ([]byte, error) {
	if err := interleavedGeometry(format, len(raw), rows, cols); err != nil {
		return nil, err
	}
	out := make([]byte, len(raw))
	formats[format].(interleaver).tileRuns(rows, cols, func(rawOff, tiledOff, n int) {
		copy(out[tiledOff:tiledOff+n], raw[rawOff:rawOff+n])
	})
	return out, nil
}

// UnpackInterleaved is the inverse of RepackInterleaved.
func UnpackInterleaved(format string, tiled []byte, rows, cols int) ([]byte, error) {
	if err := interleavedGeometry(format, len(tiled), rows, cols); err != nil {
		return nil, err
	}
	out := make([]byte, len(tiled))
	formats[format].(interleaver).tileRuns(rows, cols, func(rawOff, tiledOff, n int) {
		copy(out[rawOff:rawOff+n], tiled[tiledOff:tiledOff+n])
	})
	return out, nil
}

// interleavedGeometry checks format, shape and buffer size for the
// interleaved layout.
func interleavedGeometry(format string, n, rows, cols int) error {
	f, ok := formats[format].(interleaver)
	if !ok {
		return fmt.Errorf("repacking %q into the interleaved layout: %w: accepted: %s",
			format, ErrUnknownFormat, strings.Join(formatsWith[interleaver](), ", "))
	}
	tile := f.tileWeights()
	want, err := f.Bytes(rows, cols)
	if err != nil {
		return fmt.Errorf("repacking into the interleaved layout: %w", err)
	}
	if cols%tile != 0 {
		return fmt.Errorf("repacking %s into the interleaved layout: %w: cols %d is not a multiple of %d", format, ErrShape, cols, tile)
	}
	if err := checkBytes(format, n, want); err != nil {
		return fmt.Errorf("repacking into the interleaved layout: %w", err)
	}
	return nil
}
