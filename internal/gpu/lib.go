package gpu

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
)

// sym is one resolved C entry point and the name it was found under.
type sym struct {
	addr uintptr
	name string
}

// call invokes the C function with integer or pointer arguments and returns
// its int result (CUresult, nvrtcResult).
//
// Like purego.SyscallN, pointer arguments converted to uintptr in the call
// expression are moved to the heap and kept alive for the call.
//
//go:uintptrescapes
func (s sym) call(args ...uintptr) int {
	r1, _, _ := purego.SyscallN(s.addr, args...)
	return int(int32(r1))
}

// callPtr invokes the C function and returns its pointer result.
//
//go:uintptrescapes
func (s sym) callPtr(args ...uintptr) unsafe.Pointer {
	r1, _, _ := purego.SyscallN(s.addr, args...)
	return *(*unsafe.Pointer)(unsafe.Pointer(&r1))
}

// lookup resolves the first of names that the library exports.
func lookup(handle uintptr, names ...string) (sym, error) {
	for _, n := range names {
		if a, err := purego.Dlsym(handle, n); err == nil && a != 0 {
			return sym{addr: a, name: n}, nil
		}
	}
	return sym{}, fmt.Errorf("symbol %s not exported", strings.Join(names, " or "))
}

// symSpec names a required or optional symbol and where to store it.
type symSpec struct {
	dst      *sym
	names    []string // tried in order: the versioned name first
	optional bool
}

// resolve fills every spec from the library; lib names it in errors.
func resolve(handle uintptr, lib string, specs []symSpec) error {
	for _, s := range specs {
		v, err := lookup(handle, s.names...)
		if err != nil {
			if s.optional {
				continue
			}
			return fmt.Errorf("%s: %w (library too old?)", lib, err)
		}
		*s.dst = v
	}
	return nil
}

// cString returns s as a NUL-terminated byte slice in Go memory.
func cString(s string) []byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b
}

// goString copies a NUL-terminated C string (at most max bytes).
func goString(p unsafe.Pointer, max int) string {
	if p == nil {
		return ""
	}
	n := 0
	for n < max && *(*byte)(unsafe.Add(p, n)) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(p), n))
}

// goStringFromBuf returns the text of buf up to its first NUL.
func goStringFromBuf(buf []byte) string {
	for i, c := range buf {
		if c == 0 {
			return string(buf[:i])
		}
	}
	return string(buf)
}

// mappedFile returns the file mapped at addr in this process, read from
// /proc/self/maps: the path of the library a symbol came from. It returns ""
// when the address is not in a file mapping.
func mappedFile(addr uintptr) string {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 7f12a000-7f12b000 r-xp 00000000 08:01 123 /usr/lib/libx.so
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		l, err1 := strconv.ParseUint(lo, 16, 64)
		h, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || uint64(addr) < l || uint64(addr) >= h {
			continue
		}
		return strings.Join(fields[5:], " ")
	}
	return ""
}

// realPath resolves symlinks, falling back to the cleaned path.
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}
