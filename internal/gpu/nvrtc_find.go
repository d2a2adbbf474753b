package gpu

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// EnvNVRTC names an NVRTC library (a file) or a folder holding one; it is
// tried before every other place.
const EnvNVRTC = "GEMV_NVRTC"

// nvrtcSonames are tried through the dynamic loader's own search, newest first.
var nvrtcSonames = []string{"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"}

// nvrtcSearch says where to look for NVRTC; tests replace its fields.
type nvrtcSearch struct {
	getenv    func(string) string
	cudaDirs  []string // fixed toolkit folders, after $CUDA_HOME/lib64
	pipRoots  []string // glob patterns of site-packages folders
	pipSubdir []string // NVRTC folders inside a site-packages folder
}

// defaultSearch is where FindNVRTC looks.
var defaultSearch = nvrtcSearch{
	getenv:   os.Getenv,
	cudaDirs: []string{"/usr/local/cuda/lib64"},
	pipRoots: []string{
		"/usr/lib/python3*/site-packages",
		"/usr/lib/python3*/dist-packages",
		"/usr/local/lib/python3*/site-packages",
		"/usr/local/lib/python3*/dist-packages",
		"/opt/*/.venv/lib/python3*/site-packages",
		"/opt/*/venv/lib/python3*/site-packages",
		"/opt/conda/lib/python3*/site-packages",
		"/root/.local/lib/python3*/site-packages",
	},
	pipSubdir: []string{"nvidia/cuda_nvrtc/lib", "nvidia/cu13/lib"},
}

// candidate is one place to dlopen: a bare soname (searched by the loader)
// or a file path.
type candidate struct {
	name   string // what to pass to dlopen
	origin string // why it is tried, e.g. "GEMV_NVRTC", "soname", "$CUDA_HOME"
}

// candidates lists the places to try, in order, without touching them.
func (s nvrtcSearch) candidates() []candidate {
	var out []candidate
	if p := s.getenv(EnvNVRTC); p != "" {
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			for _, f := range libsIn(p) {
				out = append(out, candidate{f, EnvNVRTC})
			}
		} else {
			out = append(out, candidate{p, EnvNVRTC})
		}
	}
	for _, n := range nvrtcSonames {
		out = append(out, candidate{n, "soname"})
	}
	if h := s.getenv("CUDA_HOME"); h != "" {
		for _, f := range libsIn(filepath.Join(h, "lib64")) {
			out = append(out, candidate{f, "$CUDA_HOME"})
		}
	}
	for _, d := range s.cudaDirs {
		for _, f := range libsIn(d) {
			out = append(out, candidate{f, d})
		}
	}
	for _, root := range s.pipRoots {
		dirs, _ := filepath.Glob(root)
		sort.Strings(dirs)
		for _, d := range dirs {
			for _, sub := range s.pipSubdir {
				for _, f := range libsIn(filepath.Join(d, sub)) {
					out = append(out, candidate{f, "pip"})
				}
			}
		}
	}
	return out
}

// libsIn lists the NVRTC libraries in dir (libnvrtc.so, libnvrtc.so.12,
// libnvrtc.so.12.8.93, ...), longest version first; builtins and static
// archives are not NVRTC entry points and are skipped.
func libsIn(dir string) []string {
	m, _ := filepath.Glob(filepath.Join(dir, "libnvrtc.so*"))
	sort.Slice(m, func(i, j int) bool { return versionAfter(filepath.Base(m[i]), filepath.Base(m[j])) })
	return m
}

// versionAfter orders "libnvrtc.so.13.0.1" before "libnvrtc.so.12.8" before
// "libnvrtc.so": newer versions first, then the shorter name.
func versionAfter(a, b string) bool {
	va, vb := soVersion(a), soVersion(b)
	for i := 0; i < len(va) && i < len(vb); i++ {
		if va[i] != vb[i] {
			return va[i] > vb[i]
		}
	}
	if len(va) != len(vb) {
		return len(va) > len(vb)
	}
	return a < b
}

// soVersion returns the numbers after ".so." in a library file name.
func soVersion(name string) []int {
	_, rest, ok := strings.Cut(name, ".so.")
	if !ok {
		return nil
	}
	var v []int
	for _, f := range strings.Split(rest, ".") {
		n, err := strconv.Atoi(f)
		if err != nil {
			break
		}
		v = append(v, n)
	}
	return v
}
