package lockfile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSymlinkRefused: a lock path that is a symbolic link is refused and
// its target is left as it was.
func TestSymlinkRefused(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim.txt")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "shared.db.lock")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Acquire(context.Background(), link, 0, nil); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Acquire through a symlink: %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Errorf("the symlink's target changed: %q", b)
	}
}

// TestNeverWritesAFileItDidNotCreate: a hard link to another file, or a
// file with other content, is locked but not written.
func TestNeverWritesAFileItDidNotCreate(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim.txt")
	os.WriteFile(victim, []byte("precious\n"), 0o644)
	hard := filepath.Join(dir, "hard.lock")
	if err := os.Link(victim, hard); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.lock")
	os.WriteFile(big, []byte("this is someone's notes, longer than a pid"), 0o644)
	for _, p := range []string{hard, big} {
		before, _ := os.ReadFile(p)
		l, err := Acquire(context.Background(), p, 0, nil)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		l.Release()
		if after, _ := os.ReadFile(p); string(after) != string(before) {
			t.Errorf("%s was written: %q", p, after)
		}
	}
	// Our own lock file gets our pid, and again after a shorter pid.
	own := filepath.Join(dir, "own.lock")
	os.WriteFile(own, []byte("123456789\n"), 0o644)
	l, err := Acquire(context.Background(), own, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if b, _ := os.ReadFile(own); string(b) != strconv.Itoa(os.Getpid())+"\n" {
		t.Errorf("own lock file holds %q", b)
	}
}

// TestTwoProcesses: a lock held by another process is busy, named as an
// autotune only when it is one, and free once that process exits.
func TestTwoProcesses(t *testing.T) {
	if os.Getenv("LOCKFILE_HOLD") != "" {
		l, err := Acquire(context.Background(), os.Getenv("LOCKFILE_HOLD"), 0, nil)
		if err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("held\n")
		time.Sleep(time.Hour)
		l.Release()
		return
	}
	path := filepath.Join(t.TempDir(), "gpu.lock")
	cmd := exec.Command(os.Args[0], "-test.run=TestTwoProcesses")
	cmd.Env = append(os.Environ(), "LOCKFILE_HOLD="+path)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := out.Read(buf); err != nil || string(buf) != "held\n" {
		t.Fatalf("child: %q %v", buf, err)
	}
	_, err := Acquire(context.Background(), path, 100*time.Millisecond, nil)
	var b *Busy
	if !errors.As(err, &b) || !errors.Is(err, ErrBusy) || b.PID != cmd.Process.Pid {
		t.Fatalf("second holder: %v", err)
	}
	// "another autotune" where /proc names the holder's command, else
	// "another process": either way the path and the holder's pid.
	if msg, pid := err.Error(), fmt.Sprintf("(pid %d)", cmd.Process.Pid); !strings.Contains(msg, path+" is held by another ") || !strings.Contains(msg, pid) {
		t.Errorf("second holder's error %q does not name both the file and the holder %s", msg, pid)
	}
	cmd.Process.Kill()
	cmd.Wait()
	l, err := Acquire(context.Background(), path, 2*time.Second, nil)
	if err != nil {
		t.Fatalf("after the holder died: %v", err)
	}
	l.Release()
}

// TestWaitEndsWithContext: a wait of an hour for a held lock ends when its
// context does (a Ctrl-C or SIGTERM), naming the holder, and the lock is
// still the holder's.
func TestWaitEndsWithContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	held, err := Acquire(context.Background(), path, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	ctx, cancel := context.WithCancel(context.Background())
	waited := false
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	start := time.Now()
	_, err = Acquire(ctx, path, time.Hour, func(*Busy) { waited = true })
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "stopped waiting for "+path+", held by") {
		t.Fatalf("interrupted wait: %v", err)
	}
	if !waited || time.Since(start) > 10*time.Second {
		t.Errorf("waited %v (told %v)", time.Since(start), waited)
	}
	if _, err := Acquire(context.Background(), path, 0, nil); !errors.Is(err, ErrBusy) {
		t.Errorf("after the interrupted wait: %v, want the lock still held", err)
	}
}

// TestStalePID: a pid in the file that is not running, or is not an
// autotune, is named stale.
func TestStalePID(t *testing.T) {
	f, _ := os.CreateTemp(t.TempDir(), "x")
	f.WriteString("999999999\n")
	if b := holder("x", f); !strings.Contains(b.Holder, "not running: stale") {
		t.Errorf("dead pid: %s", b.Holder)
	}
	f.WriteAt([]byte("1        \n"), 0)
	if b := holder("x", f); strings.Contains(b.Holder, "another autotune") {
		t.Errorf("pid 1: %s", b.Holder)
	}
	f.Close()
}

// TestMachineDirChoice: the per-machine lock folder is the first candidate
// that is a folder nobody else can swap a lock file in: root's, sticky and
// world-writable (as /run/lock), or this user's and writable by no one
// else. A missing path, a file, and a folder of this user's that others may
// write are passed over.
func TestMachineDirChoice(t *testing.T) {
	root := t.TempDir()
	mk := func(name string, mode os.FileMode) string {
		p := filepath.Join(root, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	missing := filepath.Join(root, "missing")
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	private := mk("private", 0o755)
	groupWritable := mk("group", 0o775)
	worldWritable := mk("world", 0o777)
	sticky := mk("sticky", 0o777|os.ModeSticky)
	type choice struct {
		name string
		dirs []string
		want string
	}
	tests := []choice{
		{"none", nil, ""},
		{"missing, then a file, then ours", []string{missing, file, private}, private},
		{"others may write, then ours", []string{groupWritable, worldWritable, private}, private},
		{"only folders others may write", []string{groupWritable, worldWritable}, ""},
		{"the first that qualifies", []string{private, mk("private2", 0o700)}, private},
	}
	if os.Getuid() == 0 {
		// A folder of root's, sticky and world-writable, is /run/lock's kind.
		tests = append(tests, choice{"root's sticky folder", []string{worldWritable, sticky}, sticky})
	} else {
		// This user's sticky world-writable folder lets others create files.
		tests = append(tests, choice{"a sticky folder not root's", []string{sticky}, ""})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := firstLockDir(tt.dirs); got != tt.want {
				t.Errorf("firstLockDir(%v) = %q, want %q", tt.dirs, got, tt.want)
			}
		})
	}
}
