package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
)

// checkGGUFHeader walks the fixed header and the metadata of a GGUF file
// with every count and length checked against the file's size, before the
// GGUF parser sees the file: the parser allocates from these numbers and
// divides by general.alignment, so a damaged or hostile header would crash
// it. It also checks the values the parser uses for sizes.
func checkGGUFHeader(r io.ReaderAt, size int64) error {
	h := headerReader{r: r, size: size}
	magic := h.bytes(4)
	if h.err != nil {
		return fmt.Errorf("%d bytes: too short for a GGUF header (want a GGUF v1-v3 model file)", size)
	}
	if string(magic) != "GGUF" {
		return errors.New("not a GGUF file: no GGUF magic (want a GGUF v1-v3 model file)")
	}
	version := h.u32()
	if h.err == nil && (version < 1 || version > 3) {
		return fmt.Errorf("GGUF version %d: want 1 to 3", version)
	}
	tensors, kvs := h.count(), h.count()
	// Every tensor info takes at least 8+1+4+8+4+8 bytes, every entry 8+1+4.
	if h.err == nil && (tensors > uint64(size)/33 || kvs > uint64(size)/13) {
		return fmt.Errorf("the header claims %d tensors and %d metadata entries: more than a %d-byte file holds", tensors, kvs, size)
	}
	for i := uint64(0); i < kvs && h.err == nil; i++ {
		key := string(h.str())
		typ := h.u32()
		if h.err != nil {
			break
		}
		v, isInt := h.value(typ, 0)
		if h.err != nil || !isInt {
			continue
		}
		switch key {
		case "general.alignment":
			if v == 0 || v > 1<<20 || bits.OnesCount64(v) != 1 {
				return fmt.Errorf("general.alignment = %d: want a power of two up to 1 MiB", v)
			}
		case "split.count", "split.no", "split.tensors.count":
			if v > 1<<24 {
				return fmt.Errorf("%s = %d: more than any model has (at most %d)", key, v, 1<<24)
			}
		}
	}
	if h.err != nil {
		return fmt.Errorf("the metadata runs past the end of the file or is malformed (%v)", h.err)
	}
	return nil
}

// headerReader reads little-endian fields at increasing offsets, failing
// on anything past the end.
type headerReader struct {
	r    io.ReaderAt
	size int64
	off  int64
	err  error
}

var errShortHeader = errors.New("truncated")

func (h *headerReader) bytes(n uint64) []byte {
	if h.err != nil {
		return nil
	}
	if n > uint64(h.size-h.off) || n > 1<<30 {
		h.err = fmt.Errorf("%w: %d bytes wanted at offset %d of %d", errShortHeader, n, h.off, h.size)
		return nil
	}
	b := make([]byte, n)
	if _, err := h.r.ReadAt(b, h.off); err != nil {
		h.err = err
		return nil
	}
	h.off += int64(n)
	return b
}

func (h *headerReader) skip(n uint64) {
	if h.err == nil && n > uint64(h.size-h.off) {
		h.err = fmt.Errorf("%w: %d bytes wanted at offset %d of %d", errShortHeader, n, h.off, h.size)
	}
	if h.err == nil {
		h.off += int64(n)
	}
}

func (h *headerReader) u32() uint32 {
	if b := h.bytes(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (h *headerReader) count() uint64 {
	if b := h.bytes(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (h *headerReader) str() []byte { return h.bytes(h.count()) }

// GGUF metadata value types and their sizes (0: not fixed-size).
var ggufTypeSize = map[uint32]uint64{0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 8: 0, 9: 0, 10: 8, 11: 8, 12: 8}

// value reads one value of typ (arrays nest at most a few levels) and
// returns it when it is an unsigned or signed integer.
func (h *headerReader) value(typ uint32, depth int) (v uint64, isInt bool) {
	size, known := ggufTypeSize[typ]
	switch {
	case !known:
		h.err = fmt.Errorf("metadata value type %d: want 0 to 12", typ)
	case typ == 8: // string
		h.skip(h.count())
	case typ == 9: // array: element type, count, elements
		et, n := h.u32(), h.count()
		if depth > 4 {
			h.err = errors.New("arrays nested more than 4 deep")
			return 0, false
		}
		if es := ggufTypeSize[et]; es > 0 {
			if n > uint64(h.size)/es {
				h.err = fmt.Errorf("an array of %d values of %d bytes in a %d-byte file", n, es, h.size)
				return 0, false
			}
			h.skip(n * es)
			return 0, false
		}
		for i := uint64(0); i < n && h.err == nil; i++ {
			h.value(et, depth+1)
		}
	default:
		b := h.bytes(size)
		if b == nil {
			return 0, false
		}
		var x uint64
		for i := len(b) - 1; i >= 0; i-- {
			x = x<<8 | uint64(b[i])
		}
		intType := typ <= 5 || typ == 10 || typ == 11
		if intType && (typ == 1 || typ == 3 || typ == 5 || typ == 11) && b[len(b)-1]&0x80 != 0 {
			return x, false // a negative signed value: not a count
		}
		return x, intType
	}
	return 0, false
}
