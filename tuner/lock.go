package tuner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrGPUBusy is returned (wrapped) when another tuner holds a GPU's lock.
var ErrGPUBusy = errors.New("GPU is being tuned by another autotune")

// gpuLock is an exclusive flock on a file named after the GPU's UUID: only
// one tuner measures a GPU at a time. The kernel drops it when the process
// dies, so a crashed tuner never leaves a GPU locked.
type gpuLock struct {
	f *os.File
}

// lockDir is where the lock files live; tests may change it.
var lockDir = func() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "gemvtune", "locks")
	}
	return filepath.Join(os.TempDir(), "gemvtune-locks")
}

// lockGPU takes the lock of the GPU with uuid. With wait, it waits (calling
// waiting once with the holder's pid); otherwise it fails at once with
// ErrGPUBusy naming the holder.
func lockGPU(uuid string, wait bool, waiting func(pid int)) (*gpuLock, error) {
	dir := lockDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("GPU lock: %w", err)
	}
	path := filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_").Replace(uuid)+".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("GPU lock: %w", err)
	}
	told := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("GPU lock %s: %w", path, err)
		}
		pid := holderPID(path)
		if !wait {
			f.Close()
			return nil, fmt.Errorf("%w: %s is locked by pid %d (%s); pass --wait to queue behind it", ErrGPUBusy, uuid, pid, path)
		}
		if !told && waiting != nil {
			waiting(pid)
			told = true
		}
		time.Sleep(500 * time.Millisecond)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return &gpuLock{f: f}, nil
}

func holderPID(path string) int {
	b, _ := os.ReadFile(path)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

func (l *gpuLock) unlock() {
	if l == nil || l.f == nil {
		return
	}
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	_ = l.f.Close()
	l.f = nil
}
