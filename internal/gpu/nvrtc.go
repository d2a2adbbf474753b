package gpu

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// NVRTC is one loaded NVRTC library.
type NVRTC struct {
	Path    string  // the file it was loaded from (symlinks resolved)
	Origin  string  // where it was found: "GEMV_NVRTC", "soname", "$CUDA_HOME", a folder, "pip"
	Version Version // nvrtcVersion
	Archs   []Arch  // nvrtcGetSupportedArchs, ascending

	version, numArchs, archs, errorString                       sym
	create, compile, destroy, logSize, getLog, cubinSize, cubin sym
}

func (n *NVRTC) specs() []symSpec {
	return []symSpec{
		{dst: &n.version, names: []string{"nvrtcVersion"}},
		{dst: &n.numArchs, names: []string{"nvrtcGetNumSupportedArchs"}},
		{dst: &n.archs, names: []string{"nvrtcGetSupportedArchs"}},
		{dst: &n.errorString, names: []string{"nvrtcGetErrorString"}},
		{dst: &n.create, names: []string{"nvrtcCreateProgram"}},
		{dst: &n.compile, names: []string{"nvrtcCompileProgram"}},
		{dst: &n.destroy, names: []string{"nvrtcDestroyProgram"}},
		{dst: &n.logSize, names: []string{"nvrtcGetProgramLogSize"}},
		{dst: &n.getLog, names: []string{"nvrtcGetProgramLog"}},
		{dst: &n.cubinSize, names: []string{"nvrtcGetCUBINSize"}},
		{dst: &n.cubin, names: []string{"nvrtcGetCUBIN"}},
	}
}

// String reads "NVRTC 12.8 (/usr/local/cuda/lib64/libnvrtc.so.12.8.93)".
func (n *NVRTC) String() string { return fmt.Sprintf("NVRTC %s (%s)", n.Version, n.Path) }

// Supports reports whether n can build a cubin for a.
func (n *NVRTC) Supports(a Arch) bool {
	for _, x := range n.Archs {
		if x == a {
			return true
		}
	}
	return false
}

// ArchRange reads "sm_50..sm_90 (12 archs)", or "none".
func (n *NVRTC) ArchRange() string {
	if len(n.Archs) == 0 {
		return "none"
	}
	return fmt.Sprintf("%s..%s (%d archs)", n.Archs[0], n.Archs[len(n.Archs)-1], len(n.Archs))
}

// loadNVRTC opens one library and reads its version and archs.
func loadNVRTC(c candidate) (*NVRTC, uintptr, error) {
	h, err := purego.Dlopen(c.name, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, 0, err
	}
	n := &NVRTC{Origin: c.origin}
	if err := resolve(h, c.name, n.specs()); err != nil {
		purego.Dlclose(h)
		return nil, 0, err
	}
	n.Path = c.name
	if p := mappedFile(n.version.addr); p != "" {
		n.Path = p
	}
	n.Path = realPath(n.Path)
	var major, minor int32
	if err := n.check(n.version, n.version.call(uintptr(unsafe.Pointer(&major)), uintptr(unsafe.Pointer(&minor)))); err != nil {
		purego.Dlclose(h)
		return nil, 0, err
	}
	n.Version = Version{Major: int(major), Minor: int(minor)}
	var count int32
	if err := n.check(n.numArchs, n.numArchs.call(uintptr(unsafe.Pointer(&count)))); err != nil {
		purego.Dlclose(h)
		return nil, 0, err
	}
	if count > 0 {
		nums := make([]int32, count)
		if err := n.check(n.archs, n.archs.call(uintptr(unsafe.Pointer(&nums[0])))); err != nil {
			purego.Dlclose(h)
			return nil, 0, err
		}
		for _, x := range nums {
			n.Archs = append(n.Archs, ArchFromNumber(int(x)))
		}
		sort.Slice(n.Archs, func(i, j int) bool { return n.Archs[i].Number() < n.Archs[j].Number() })
	}
	return n, h, nil
}

// NVRTCError is a failed NVRTC call.
type NVRTCError struct {
	Func string // e.g. "nvrtcCreateProgram"
	Code int    // the nvrtcResult
	Msg  string // nvrtcGetErrorString, e.g. "NVRTC_ERROR_INVALID_OPTION"
}

// Error reads "nvrtcCompileProgram: NVRTC_ERROR_INVALID_OPTION (5)".
func (e *NVRTCError) Error() string { return fmt.Sprintf("%s: %s (%d)", e.Func, e.Msg, e.Code) }

func (n *NVRTC) check(s sym, code int) error {
	if code == 0 {
		return nil
	}
	msg := "NVRTC_ERROR"
	if n.errorString.addr != 0 {
		if m := goString(n.errorString.callPtr(uintptr(code)), 128); m != "" {
			msg = m
		}
	}
	return &NVRTCError{Func: s.name, Code: code, Msg: msg}
}

var (
	findOnce sync.Once
	found    []*NVRTC
	findErr  error
)

// FindNVRTC loads every distinct NVRTC library it finds, in this order:
// $GEMV_NVRTC (a file or folder), the sonames libnvrtc.so, .so.13, .so.12,
// .so.11.2 through the loader's search, $CUDA_HOME/lib64,
// /usr/local/cuda/lib64, and pip's nvidia/cuda_nvrtc/lib and nvidia/cu13/lib
// under the usual site-packages folders. Two names for one file count once.
// The result is computed once per process.
//
// It returns ErrNoNVRTC (wrapped) when none loads, and an error naming
// GEMV_NVRTC when that variable is set but does not name a loadable library.
func FindNVRTC() ([]*NVRTC, error) {
	findOnce.Do(func() { found, findErr = defaultSearch.load() })
	return found, findErr
}

// load tries every candidate of s.
func (s nvrtcSearch) load() ([]*NVRTC, error) {
	var libs []*NVRTC
	seen := map[string]bool{}
	envOK := false
	for _, c := range s.candidates() {
		n, h, err := loadNVRTC(c)
		if err != nil {
			if c.origin == EnvNVRTC {
				return nil, fmt.Errorf("%s=%s: not a loadable NVRTC library: %v", EnvNVRTC, s.getenv(EnvNVRTC), err)
			}
			continue
		}
		if c.origin == EnvNVRTC {
			envOK = true
		}
		if seen[n.Path] {
			purego.Dlclose(h)
			continue
		}
		seen[n.Path] = true
		libs = append(libs, n)
	}
	if env := s.getenv(EnvNVRTC); env != "" && !envOK {
		return nil, fmt.Errorf("%s=%s: no libnvrtc.so* there", EnvNVRTC, env)
	}
	if len(libs) == 0 {
		return nil, fmt.Errorf("%w (tried %s, %s, $CUDA_HOME/lib64, %s and pip's nvidia/cuda_nvrtc; set %s to a libnvrtc.so)",
			ErrNoNVRTC, EnvNVRTC, strings.Join(nvrtcSonames, ", "), strings.Join(s.cudaDirs, ", "), EnvNVRTC)
	}
	return libs, nil
}

// ChooseNVRTC returns the newest library that can build arch. When none
// can, the error lists each version found and the archs it supports
// (e.g. NVRTC 13 no longer builds sm_70).
func ChooseNVRTC(libs []*NVRTC, arch Arch) (*NVRTC, error) {
	var best *NVRTC
	for _, n := range libs {
		if n.Supports(arch) && (best == nil || best.Version.Less(n.Version)) {
			best = n
		}
	}
	if best != nil {
		return best, nil
	}
	if len(libs) == 0 {
		return nil, fmt.Errorf("%w to build %s", ErrNoNVRTC, arch)
	}
	parts := make([]string, len(libs))
	for i, n := range libs {
		parts[i] = fmt.Sprintf("NVRTC %s at %s builds %s", n.Version, n.Path, n.ArchRange())
	}
	return nil, fmt.Errorf("no NVRTC library can build %s: %s; set %s to an NVRTC that supports it",
		arch, strings.Join(parts, "; "), EnvNVRTC)
}

// CompileError is a compilation that failed; Log holds NVRTC's messages.
type CompileError struct {
	Name string // the program name
	Arch Arch
	Log  string
	Err  error // the NVRTCError of nvrtcCompileProgram
}

// Error reads "compiling gemv.cu for sm_90: nvrtcCompileProgram: ...: <first log line>".
func (e *CompileError) Error() string {
	first, _, _ := strings.Cut(strings.TrimSpace(e.Log), "\n")
	return fmt.Sprintf("compiling %s for %s: %v: %s", e.Name, e.Arch, e.Err, first)
}

// Unwrap returns the NVRTC error.
func (e *CompileError) Unwrap() error { return e.Err }

// Compile builds src (a CUDA C++ program that includes nothing) into a cubin
// for arch. name names the program in messages; opts are extra NVRTC options
// such as "-lineinfo" or "-DROWS=2" (the arch option is added). The returned
// log holds the compiler's warnings. It is safe to call from several
// goroutines.
func (n *NVRTC) Compile(src, name string, arch Arch, opts ...string) (cubin []byte, log string, err error) {
	if !n.Supports(arch) {
		return nil, "", fmt.Errorf("compiling %s: NVRTC %s cannot build %s (it builds %s)", name, n.Version, arch, n.ArchRange())
	}
	csrc, cname := cString(src), cString(name)
	var prog uintptr
	if err := n.check(n.create, n.create.call(uintptr(unsafe.Pointer(&prog)),
		uintptr(unsafe.Pointer(&csrc[0])), uintptr(unsafe.Pointer(&cname[0])), 0, 0, 0)); err != nil {
		return nil, "", fmt.Errorf("compiling %s: %w", name, err)
	}
	defer n.destroy.call(uintptr(unsafe.Pointer(&prog)))

	all := append([]string{"--gpu-architecture=" + arch.String()}, opts...)
	cerr := n.compileProgram(prog, all)
	log = n.programLog(prog)
	if cerr != nil {
		return nil, log, &CompileError{Name: name, Arch: arch, Log: log, Err: cerr}
	}
	var size uintptr
	if err := n.check(n.cubinSize, n.cubinSize.call(prog, uintptr(unsafe.Pointer(&size)))); err != nil {
		return nil, log, fmt.Errorf("compiling %s: %w", name, err)
	}
	if size == 0 {
		return nil, log, fmt.Errorf("compiling %s: NVRTC returned an empty cubin for %s", name, arch)
	}
	cubin = make([]byte, size)
	if err := n.check(n.cubin, n.cubin.call(prog, uintptr(unsafe.Pointer(&cubin[0])))); err != nil {
		return nil, log, fmt.Errorf("compiling %s: %w", name, err)
	}
	return cubin, log, nil
}

// compileProgram passes opts as a pinned array of C strings.
func (n *NVRTC) compileProgram(prog uintptr, opts []string) error {
	var pin runtime.Pinner
	defer pin.Unpin()
	ptrs := make([]uintptr, len(opts))
	for i, o := range opts {
		b := cString(o)
		pin.Pin(&b[0])
		ptrs[i] = uintptr(unsafe.Pointer(&b[0]))
	}
	return n.check(n.compile, n.compile.call(prog, uintptr(len(ptrs)), uintptr(unsafe.Pointer(&ptrs[0]))))
}

// programLog returns the compiler log, or "" when it cannot be read.
func (n *NVRTC) programLog(prog uintptr) string {
	var size uintptr
	if n.logSize.call(prog, uintptr(unsafe.Pointer(&size))) != 0 || size <= 1 {
		return ""
	}
	buf := make([]byte, size)
	if n.getLog.call(prog, uintptr(unsafe.Pointer(&buf[0]))) != 0 {
		return ""
	}
	return strings.TrimSpace(goStringFromBuf(buf))
}
