package variants

import (
	"fmt"
	"strings"
)

// scaledBlocks is a Format of plain GGUF blocks: a 2-byte f16 scale, then
// the block's quant bytes. The planar and tiled layouts split them.
type scaledBlocks interface {
	Format
	// quantBytes is the bytes of quants per block (BlockWeights weights).
	quantBytes() int
}

// RepackPlanes converts a raw GGUF q4_0 or q8_0 tensor of shape [rows, cols]
// into the planar layout (layout knob l = 1, docs/formats.md): first the
// quant plane, for each row and each block of the row the block's qs bytes
// (16 for q4_0, 32 for q8_0), then the scale plane, for each row and each
// block the block's 2-byte f16 d. Every row of the quant plane starts
// 16-byte aligned (cols/2 or cols bytes per row), and the scale plane starts
// at rows*cols/2 (q4_0) or rows*cols (q8_0). The result has exactly as many
// bytes as raw.
func RepackPlanes(format string, raw []byte, rows, cols int) ([]byte, error) {
	g, err := planeGeometry(format, len(raw), rows, cols)
	if err != nil {
		return nil, err
	}
	out := make([]byte, len(raw))
	quant, scales := out[:g.blocks*g.quantBytes], out[g.blocks*g.quantBytes:]
	for i := 0; i < g.blocks; i++ {
		blk := raw[i*(g.quantBytes+2) : (i+1)*(g.quantBytes+2)]
		copy(scales[2*i:2*i+2], blk[:2])
		copy(quant[i*g.quantBytes:(i+1)*g.quantBytes], blk[2:])
	}
	return out, nil
}

// UnpackPlanes is the inverse of RepackPlanes: it rebuilds the raw GGUF
// blocks from the planar layout.
func UnpackPlanes(format string, planes []byte, rows, cols int) ([]byte, error) {
	g, err := planeGeometry(format, len(planes), rows, cols)
	if err != nil {
		return nil, err
	}
	out := make([]byte, len(planes))
	quant, scales := planes[:g.blocks*g.quantBytes], planes[g.blocks*g.quantBytes:]
	for i := 0; i < g.blocks; i++ {
		blk := out[i*(g.quantBytes+2) : (i+1)*(g.quantBytes+2)]
		copy(blk[:2], scales[2*i:2*i+2])
		copy(blk[2:], quant[i*g.quantBytes:(i+1)*g.quantBytes])
	}
	return out, nil
}

type planeGeom struct{ blocks, quantBytes int }

// planeGeometry checks format, shape and buffer size for the plane repack.
func planeGeometry(format string, n, rows, cols int) (planeGeom, error) {
	f, ok := formats[format].(scaledBlocks)
	if !ok {
		return planeGeom{}, fmt.Errorf("repacking %q into planes: %w: accepted: %s",
			format, ErrUnknownFormat, strings.Join(formatsWith[scaledBlocks](), ", "))
	}
	want, err := f.Bytes(rows, cols)
	if err != nil {
		return planeGeom{}, fmt.Errorf("repacking into planes: %w", err)
	}
	if err := checkBytes(format, n, want); err != nil {
		return planeGeom{}, fmt.Errorf("repacking into planes: %w", err)
	}
	return planeGeom{blocks: rows * cols / f.BlockWeights(), quantBytes: f.quantBytes()}, nil
}

// tileBlocks is the blocks per tile of the tiled layout (l = 2).
const tileBlocks = 8

// TileWeights is the weights per tile of the tiled layout (l = 2): its
// shapes need cols to be a multiple of it.
const TileWeights = tileBlocks * 32

// RepackTiles converts a raw GGUF q8_0 tensor of shape [rows, cols] into
// the tiled layout (layout knob l = 2, docs/formats.md): each row is a run
// of tiles of 8 consecutive blocks, a tile being the 8 blocks' 2-byte f16
// d (16 bytes), then their 8×32 qs bytes in order. A tile is 272 bytes, a
// multiple of 16, so with 16-byte aligned rows every load is aligned; rows
// keep their raw size and place. cols must be a multiple of 256.
func RepackTiles(format string, raw []byte, rows, cols int) ([]byte, error) {
	g, err := tileGeometry(format, len(raw), rows, cols)
	if err != nil {
		return nil, err
	}
	out := make([]byte, len(raw))
	bb := g.quantBytes + 2
	for t := 0; t < g.blocks/tileBlocks; t++ {
		tile := out[t*tileBlocks*bb : (t+1)*tileBlocks*bb]
		for k := 0; k < tileBlocks; k++ {
			blk := raw[(t*tileBlocks+k)*bb : (t*tileBlocks+k+1)*bb]
			copy(tile[2*k:2*k+2], blk[:2])
			copy(tile[2*tileBlocks+k*g.quantBytes:2*tileBlocks+(k+1)*g.quantBytes], blk[2:])
		}
	}
	return out, nil
}

// UnpackTiles is the inverse of RepackTiles.
func UnpackTiles(format string, tiles []byte, rows, cols int) ([]byte, error) {
	g, err := tileGeometry(format, len(tiles), rows, cols)
	if err != nil {
		return nil, err
	}
	out := make([]byte, len(tiles))
	bb := g.quantBytes + 2
	for t := 0; t < g.blocks/tileBlocks; t++ {
		tile := tiles[t*tileBlocks*bb : (t+1)*tileBlocks*bb]
		for k := 0; k < tileBlocks; k++ {
			blk := out[(t*tileBlocks+k)*bb : (t*tileBlocks+k+1)*bb]
			copy(blk[:2], tile[2*k:2*k+2])
			copy(blk[2:], tile[2*tileBlocks+k*g.quantBytes:2*tileBlocks+(k+1)*g.quantBytes])
		}
	}
	return out, nil
}

// tiledBlocks is a scaledBlocks format with the tiled layout.
type tiledBlocks interface {
	scaledBlocks
	tiled()
}

// tileGeometry is planeGeometry for a tiledBlocks format plus the tile
// rule: cols a multiple of TileWeights (8 blocks of 32).
func tileGeometry(format string, n, rows, cols int) (planeGeom, error) {
	if _, ok := formats[format].(tiledBlocks); !ok {
		return planeGeom{}, fmt.Errorf("repacking %q into tiles: %w: accepted: %s", format, ErrUnknownFormat,
			strings.Join(formatsWith[tiledBlocks](), ", "))
	}
	g, err := planeGeometry(format, n, rows, cols)
	if err != nil {
		return g, err
	}
	if cols%TileWeights != 0 {
		return g, fmt.Errorf("repacking %s into tiles: %w: cols %d is not a multiple of %d", format, ErrShape, cols, TileWeights)
	}
	return g, nil
}
