package gpu

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// touch creates the files under root (folders as needed).
func touch(t *testing.T, root string, files ...string) {
	t.Helper()
	for _, f := range files {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("not a library"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestNVRTCCandidateOrder(t *testing.T) {
	root := t.TempDir()
	touch(t, root,
		"env/libnvrtc.so.13.0.48",
		"cudahome/lib64/libnvrtc.so",
		"cudahome/lib64/libnvrtc.so.12",
		"cudahome/lib64/libnvrtc.so.12.8.93",
		"cudahome/lib64/libnvrtc-builtins.so.12.8",
		"cudahome/lib64/libnvrtc_static.a",
		"usrlocal/lib64/libnvrtc.so.11.2",
		"py/python3.12/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12",
		"py/python3.11/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12",
		"venv/a/lib/python3.12/site-packages/nvidia/cu13/lib/libnvrtc.so.13",
		"venv/a/lib/python3.12/site-packages/nvidia/cu13/lib/libnvrtc-builtins.so.13.0",
	)
	env := map[string]string{
		EnvNVRTC:    filepath.Join(root, "env/libnvrtc.so.13.0.48"),
		"CUDA_HOME": filepath.Join(root, "cudahome"),
	}
	s := nvrtcSearch{
		getenv:    func(k string) string { return env[k] },
		cudaDirs:  []string{filepath.Join(root, "usrlocal/lib64"), filepath.Join(root, "missing")},
		pipRoots:  []string{filepath.Join(root, "py/python3*/site-packages"), filepath.Join(root, "venv/*/lib/python3*/site-packages")},
		pipSubdir: defaultSearch.pipSubdir,
	}
	var got []string
	for _, c := range s.candidates() {
		got = append(got, c.origin+" "+strings.TrimPrefix(c.name, root+"/"))
	}
	want := []string{
		"GEMV_NVRTC env/libnvrtc.so.13.0.48",
		"soname libnvrtc.so",
		"soname libnvrtc.so.13",
		"soname libnvrtc.so.12",
		"soname libnvrtc.so.11.2",
		"$CUDA_HOME cudahome/lib64/libnvrtc.so.12.8.93",
		"$CUDA_HOME cudahome/lib64/libnvrtc.so.12",
		"$CUDA_HOME cudahome/lib64/libnvrtc.so",
		filepath.Join(root, "usrlocal/lib64") + " usrlocal/lib64/libnvrtc.so.11.2",
		"pip py/python3.11/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12",
		"pip py/python3.12/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12",
		"pip venv/a/lib/python3.12/site-packages/nvidia/cu13/lib/libnvrtc.so.13",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("candidates:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// GEMV_NVRTC may name a folder.
	env[EnvNVRTC] = filepath.Join(root, "cudahome/lib64")
	if c := s.candidates(); len(c) < 3 || c[0].origin != EnvNVRTC || !strings.HasSuffix(c[0].name, "libnvrtc.so.12.8.93") {
		t.Errorf("GEMV_NVRTC folder: first candidates %v", c[:3])
	}
}

func TestNVRTCLoadRejectsBadEnv(t *testing.T) {
	root := t.TempDir()
	touch(t, root, "libnvrtc.so.12")
	for _, v := range []string{filepath.Join(root, "libnvrtc.so.12"), filepath.Join(root, "nothing-here")} {
		s := nvrtcSearch{getenv: func(k string) string {
			if k == EnvNVRTC {
				return v
			}
			return ""
		}}
		_, err := s.load()
		if err == nil || !strings.Contains(err.Error(), "GEMV_NVRTC="+v) {
			t.Errorf("GEMV_NVRTC=%s: err %v, want one naming the variable", v, err)
		}
	}
}

func TestNVRTCLoadNone(t *testing.T) {
	s := nvrtcSearch{getenv: func(string) string { return "" }}
	saved := nvrtcSonames
	nvrtcSonames = []string{"libnvrtc-does-not-exist.so.99"}
	defer func() { nvrtcSonames = saved }()
	_, err := s.load()
	if !errors.Is(err, ErrNoNVRTC) || !strings.Contains(err.Error(), "GEMV_NVRTC") {
		t.Errorf("no NVRTC anywhere: err %v, want ErrNoNVRTC naming GEMV_NVRTC", err)
	}
}

func archs(nums ...int) []Arch {
	a := make([]Arch, len(nums))
	for i, n := range nums {
		a[i] = ArchFromNumber(n)
	}
	return a
}

func TestChooseNVRTC(t *testing.T) {
	v118 := &NVRTC{Path: "/a/libnvrtc.so.11.8", Version: Version{11, 8}, Archs: archs(35, 50, 70, 80, 86, 89, 90)}
	v128 := &NVRTC{Path: "/b/libnvrtc.so.12.8", Version: Version{12, 8}, Archs: archs(50, 70, 75, 80, 90, 100, 120)}
	v130 := &NVRTC{Path: "/c/libnvrtc.so.13.0", Version: Version{13, 0}, Archs: archs(75, 80, 86, 89, 90, 100, 103, 110, 120, 121)}
	all := []*NVRTC{v118, v130, v128}
	tests := []struct {
		arch    int
		want    *NVRTC
		errSubs []string
	}{
		{90, v130, nil},
		{70, v128, nil},
		{35, v118, nil},
		{121, v130, nil},
		{60, nil, []string{"sm_60", "NVRTC 11.8", "sm_35..sm_90", "NVRTC 13.0", "sm_75..sm_121", "NVRTC 12.8", "GEMV_NVRTC"}},
	}
	for _, tt := range tests {
		got, err := ChooseNVRTC(all, ArchFromNumber(tt.arch))
		if tt.want != nil {
			if err != nil || got != tt.want {
				t.Errorf("sm_%d: got %v, %v; want %v", tt.arch, got, err, tt.want)
			}
			continue
		}
		if err == nil {
			t.Errorf("sm_%d: got %v, want an error", tt.arch, got)
			continue
		}
		for _, s := range tt.errSubs {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("sm_%d: error %q lacks %q", tt.arch, err, s)
			}
		}
	}
	// NVRTC 13 alone cannot build Volta.
	if _, err := ChooseNVRTC([]*NVRTC{v130}, ArchFromNumber(70)); err == nil {
		t.Errorf("NVRTC 13 chosen for sm_70")
	}
	if _, err := ChooseNVRTC(nil, ArchFromNumber(90)); !errors.Is(err, ErrNoNVRTC) {
		t.Errorf("no libraries: err %v, want ErrNoNVRTC", err)
	}
}

func TestLibsInOrder(t *testing.T) {
	tests := []struct{ a, b string }{
		{"libnvrtc.so.13.0.1", "libnvrtc.so.12.8"},
		{"libnvrtc.so.12.8.93", "libnvrtc.so.12"},
		{"libnvrtc.so.12", "libnvrtc.so"},
		{"libnvrtc.so.12.10", "libnvrtc.so.12.9"},
	}
	for _, tt := range tests {
		if !versionAfter(tt.a, tt.b) || versionAfter(tt.b, tt.a) {
			t.Errorf("want %s before %s", tt.a, tt.b)
		}
	}
}
