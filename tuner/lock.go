package tuner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/gemvtune/gemvtune/internal/lockfile"
)

// ErrGPUBusy is returned (wrapped) when another tuner holds a GPU's lock.
var ErrGPUBusy = errors.New("GPU is being tuned by another autotune")

// gpuLock is the lock of one GPU: only one tuner measures a GPU at a time,
// whoever runs it and whichever cache it writes. The kernel drops it when
// the process dies, so a crashed tuner never leaves a GPU locked.
type gpuLock struct {
	l *lockfile.Lock
}

// lockDir is the folder of the GPU locks, one per machine
// (lockfile.MachineDir); tests may change it.
var lockDir = lockfile.MachineDir

// lockGPU takes the lock of the GPU with uuid. With wait, it waits (calling
// waiting once with the holder's pid) until the lock is free or ctx ends;
// otherwise it fails at once with ErrGPUBusy naming the holder.
func lockGPU(ctx context.Context, uuid string, wait bool, waiting func(pid int)) (*gpuLock, error) {
	dir := lockDir()
	if dir == "" {
		return nil, errors.New("GPU lock: no per-machine lock folder (/run/lock, /var/lock or /dev/shm, sticky and writable): cannot keep two tuners off one GPU")
	}
	path := filepath.Join(dir, "gemvtune-gpu-"+strings.NewReplacer("/", "_", " ", "_").Replace(uuid)+".lock")
	d := time.Duration(0)
	if wait {
		d = 1<<63 - 1
	}
	l, err := lockfile.Acquire(ctx, path, d, func(b *lockfile.Busy) {
		if waiting != nil {
			waiting(b.PID)
		}
	})
	var b *lockfile.Busy
	if errors.As(err, &b) {
		return nil, fmt.Errorf("%w: %s is held by %s (%s); pass --wait to queue behind it", ErrGPUBusy, uuid, b.Holder, path)
	}
	if err != nil {
		return nil, fmt.Errorf("GPU lock: %w", err)
	}
	return &gpuLock{l: l}, nil
}

func (l *gpuLock) unlock() {
	if l != nil {
		_ = l.l.Release()
		l.l = nil
	}
}
