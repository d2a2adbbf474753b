// Package lockfile takes exclusive advisory locks (flock) on lock files,
// safely in folders other users can write to: it never follows a symbolic
// link, never writes into a file it did not create (a hard link or a file
// of another owner is only locked, not written), and tells a live autotune
// holder from a stale pid. The kernel drops a lock when its holder exits,
// even by kill -9, so a lock file is never removed.
package lockfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrBusy is returned (wrapped) when another process holds the lock past
// the wait.
var ErrBusy = errors.New("locked")

// Lock is a held lock.
type Lock struct {
	f *os.File
}

// Busy is ErrBusy with who holds the lock.
type Busy struct {
	Path   string
	PID    int    // the pid the file names, 0 if none
	Holder string // "another autotune (pid 12)", "another process (pid 12 is not running: stale)", ...
}

func (b *Busy) Error() string { return fmt.Sprintf("%s is held by %s", b.Path, b.Holder) }
func (b *Busy) Unwrap() error { return ErrBusy }

// Acquire locks path, creating it (mode 0644) if it is not there. It waits
// up to wait for a holder to let go (0: try once), and no longer than ctx
// lasts (an interrupted wait returns context.Cause(ctx), wrapped with
// the holder); waiting, if not nil, is called once with the holder when it
// starts to wait. The pid of this process is written into a lock file it
// created or owns alone.
func Acquire(ctx context.Context, path string, wait time.Duration, waiting func(*Busy)) (*Lock, error) {
	f, writable, err := open(path)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	told := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if !time.Now().Before(deadline) {
			b := holder(path, f)
			f.Close()
			return nil, b
		}
		if !told && waiting != nil {
			waiting(holder(path, f))
			told = true
		}
		select {
		case <-ctx.Done():
			b := holder(path, f)
			f.Close()
			return nil, fmt.Errorf("stopped waiting for %s, held by %s: %w", path, b.Holder, context.Cause(ctx))
		case <-time.After(50 * time.Millisecond):
		}
	}
	if writable {
		pid := []byte(strconv.Itoa(os.Getpid()) + "\n")
		_, err := f.WriteAt(pid, 0)
		if err == nil {
			err = f.Truncate(int64(len(pid)))
		}
		if err != nil {
			l := &Lock{f: f}
			_ = l.Release()
			return nil, fmt.Errorf("lock %s: writing this process's pid: %w", path, err)
		}
	}
	return &Lock{f: f}, nil
}

// maxLockFile is the largest file taken for a lock file of ours: a pid and
// a newline. A larger one is locked but never written.
const maxLockFile = 32

// open opens path without following a symbolic link; writable says whether
// it may hold this process's pid (it is ours alone: created now, or a
// small regular file of this user with one link).
func open(path string) (f *os.File, writable bool, err error) {
	flags := syscall.O_NOFOLLOW | syscall.O_CLOEXEC
	f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|flags, 0o644)
	created := err == nil
	if errors.Is(err, fs.ErrExist) {
		f, err = os.OpenFile(path, os.O_RDWR|flags, 0)
		if errors.Is(err, fs.ErrPermission) { // another user's lock file: a read-only descriptor locks as well
			f, err = os.OpenFile(path, os.O_RDONLY|flags, 0)
		}
	}
	if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK) {
		return nil, false, fmt.Errorf("lock file %s is a symbolic link: refused (remove it)", path)
	}
	if err != nil {
		return nil, false, fmt.Errorf("lock file: %w", err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("lock file %s is not a regular file: refused", path)
	}
	if err != nil {
		f.Close()
		return nil, false, err
	}
	if created {
		return f, true, nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	writable = ok && st.Nlink == 1 && int(st.Uid) == os.Getuid() && fi.Size() <= maxLockFile && looksLikePID(f)
	return f, writable, nil
}

func looksLikePID(f *os.File) bool {
	b := make([]byte, maxLockFile+1)
	n, _ := f.ReadAt(b, 0)
	s := strings.TrimSpace(string(b[:n]))
	if s == "" {
		return true
	}
	_, err := strconv.Atoi(s)
	return err == nil
}

// holder says who holds the lock of path, from the pid in the file.
func holder(path string, f *os.File) *Busy {
	b := &Busy{Path: path, Holder: "another process"}
	buf := make([]byte, maxLockFile)
	n, _ := f.ReadAt(buf, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil || pid <= 0 {
		return b
	}
	b.PID = pid
	switch alive, name := process(pid); {
	case !alive:
		b.Holder = fmt.Sprintf("another process (the file's pid %d is not running: stale)", pid)
	case name == "":
		b.Holder = fmt.Sprintf("another process (pid %d)", pid)
	case strings.Contains(name, "autotune") || name == filepath.Base(os.Args[0]):
		b.Holder = fmt.Sprintf("another autotune (pid %d)", pid)
	default:
		b.Holder = fmt.Sprintf("another process (the file's pid %d is %s, not an autotune: stale)", pid, name)
	}
	return b
}

// process reports whether pid runs and, where /proc says, its command name.
func process(pid int) (alive bool, name string) {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false, ""
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil {
		name = strings.TrimSpace(string(b))
	}
	return true, name
}

// Release lets the lock go. A nil or released lock is a no-op.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}

// MachineDir is the folder of per-machine locks (one per GPU, whoever
// tunes it): the first of /run/lock, /var/lock and /dev/shm that exists
// as a folder of root's that others may create files in but not remove
// another's (sticky), or that this process owns. "" when there is none.
func MachineDir() string { return firstLockDir([]string{"/run/lock", "/var/lock", "/dev/shm"}) }

// firstLockDir is MachineDir's choice among dirs, in order.
func firstLockDir(dirs []string) string {
	for _, d := range dirs {
		fi, err := os.Stat(d)
		if err != nil || !fi.IsDir() {
			continue
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			continue
		}
		rootSticky := st.Uid == 0 && fi.Mode()&fs.ModeSticky != 0 && fi.Mode().Perm()&0o002 != 0
		ours := int(st.Uid) == os.Getuid() && fi.Mode().Perm()&0o022 == 0
		if (rootSticky || ours) && syscall.Access(d, 2) == nil {
			return d
		}
	}
	return ""
}
