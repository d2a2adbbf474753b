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

// interleavedFormats lists the formats RepackInterleaved accepts with the
// weights of one tile (cols must be a multiple of it).
var interleavedFormats = map[string]int{
	"q4_0":    q40TileWeights,
	"q4_K":    q4KTileWeights,
	"affine4": affine4TileWeights,
}

const (
	// q40TileWeights: 32 blocks, 32 chunks of 32 weights.
	q40TileWeights = 32 * 32
	// q40TileBytes: the 32 blocks' f16 d (64 bytes), then their 32 × 16
	// qs bytes.
	q40TileBytes = 32 * 18
	// q4KTileWeights: 8 super-blocks, 32 chunks of 64 weights.
	q4KTileWeights = 8 * 256
	// q4KTileBytes: 8 headers (128 bytes), then the 32 chunks' low halves
	// (512), then their high halves (512).
	q4KTileBytes = 8 * 144
	// affine4TileWeights: 16 groups, 32 chunks of 32 weights.
	affine4TileWeights = 16 * 64
	// affine4TileBytes: 16 (scale, bias) words (64 bytes), then the 512
	// bytes of nibbles.
	affine4TileBytes = 16*4 + 512
)

// InterleavedTileWeights returns the weights per tile of format's
// interleaved layout (l = 1): cols must be a multiple of it. 0 when the
// format has no interleaved layout.
func InterleavedTileWeights(format string) int { return interleavedFormats[format] }

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
	interleavedRuns(format, rows, cols, func(rawOff, tiledOff, n int) {
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
	interleavedRuns(format, rows, cols, func(rawOff, tiledOff, n int) {
		copy(out[rawOff:rawOff+n], tiled[tiledOff:tiledOff+n])
	})
	return out, nil
}

// interleavedRuns defines the layout once for both directions: it calls
// move for every run of n bytes that sits at rawOff in the raw tensor and
// at tiledOff in the interleaved one. The runs cover both exactly once.
func interleavedRuns(format string, rows, cols int, move func(rawOff, tiledOff, n int)) {
	switch format {
	case "q4_0":
		// Tile t of row r at r*rowBytes + t*576 holds blocks 32t..32t+31 of
		// the row: block k's f16 d goes to 2k, its 16 qs bytes to 64 + 16k.
		rowBytes := cols / 32 * 18
		for r := 0; r < rows; r++ {
			for t := 0; t < cols/q40TileWeights; t++ {
				tile := r*rowBytes + t*q40TileBytes
				for k := 0; k < 32; k++ {
					blk := tile + 18*k // tiles keep the row's bytes in place
					move(blk, tile+2*k, 2)
					move(blk+2, tile+64+16*k, 16)
				}
			}
		}
	case "q4_K":
		// Tile t of row r at r*rowBytes + t*1152 holds super-blocks 8t..8t+7
		// of the row. Super-block k's 16-byte header goes to 16k; the
		// 32-byte quarter j of its 128 qs bytes is chunk 4k+j, whose low
		// 16 bytes go to 128 + 16(4k+j) and high 16 bytes to 640 + 16(4k+j).
		rowBytes := cols / 256 * 144
		for r := 0; r < rows; r++ {
			for t := 0; t < cols/q4KTileWeights; t++ {
				tile := r*rowBytes + t*q4KTileBytes
				for k := 0; k < 8; k++ {
					sb := tile + k*144 // the raw super-block: tiles keep the row's bytes in place
					move(sb, tile+16*k, 16)
					for j := 0; j < 4; j++ {
						chunk := 4*k + j
						move(sb+16+32*j, tile+128+16*chunk, 16)
						move(sb+16+32*j+16, tile+640+16*chunk, 16)
					}
				}
			}
		}
	case "affine4":
		// Tile t of row r at (r*cols/1024 + t)*576 holds groups 16t..16t+15
		// of the row: group g's f16 scale and f16 bias as the word at 4g
		// (scale in the low half), then the row's 512 nibble bytes of
		// weights 1024t..1024t+1023.
		groups := cols / 64
		scales := rows * cols / 2
		biases := scales + rows*groups*2
		for r := 0; r < rows; r++ {
			for t := 0; t < cols/affine4TileWeights; t++ {
				tile := (r*cols/affine4TileWeights + t) * affine4TileBytes
				for g := 0; g < 16; g++ {
					grp := r*groups + 16*t + g
					move(scales+2*grp, tile+4*g, 2)
					move(biases+2*grp, tile+4*g+2, 2)
				}
				move(r*cols/2+512*t, tile+64, 512)
			}
		}
	}
}

// interleavedGeometry checks format, shape and buffer size for the
// interleaved layout.
func interleavedGeometry(format string, n, rows, cols int) error {
	tile, ok := interleavedFormats[format]
	if !ok {
		return fmt.Errorf("repacking %q into the interleaved layout: %w: accepted: %s",
			format, ErrUnknownFormat, strings.Join([]string{"q4_0", "q4_K", "affine4"}, ", "))
	}
	f, err := FormatOf(format)
	if err != nil {
		return err
	}
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
