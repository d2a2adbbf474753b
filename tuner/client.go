package tuner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// errWorkerLost is returned when the worker process died or stopped
// answering; the worker is killed. errWorkerHung is also in the chain when
// it stopped answering (a hang past the watchdog).
var (
	errWorkerLost = errors.New("measurement worker lost")
	errWorkerHung = errors.New("no answer within the watchdog time (hang?)")
)

// workerProc is a running measurement worker: this same executable started
// with WorkerEnv set, talking JSON lines on its stdin and stdout.
type workerProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	enc    *json.Encoder
	resps  chan response
	stderr *tailBuffer
	dead   chan struct{}
}

// WorkerWrapEnv, when set, is a command (split at spaces) the worker is
// started under, e.g. "ncu --log-file ncu.log -o prof": profilers that
// follow child processes through libc do not see Go's own exec. The
// wrapper must keep its own output off stdout, which carries the protocol.
const WorkerWrapEnv = "GEMVTUNE_WORKER_WRAP"

func startWorker() (*workerProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("starting measurement worker: %w", err)
	}
	args := []string{exe, "-test.run=^$"} // a test binary runs no tests as a worker
	if wrap := strings.Fields(os.Getenv(WorkerWrapEnv)); len(wrap) > 0 {
		args = append(wrap, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), WorkerEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	tb := &tailBuffer{max: 4096}
	cmd.Stderr = tb
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting measurement worker: %w", err)
	}
	p := &workerProc{cmd: cmd, stdin: stdin, enc: json.NewEncoder(stdin), resps: make(chan response, 1), stderr: tb, dead: make(chan struct{})}
	go func() {
		dec := json.NewDecoder(bufio.NewReaderSize(stdout, 1<<20))
		for {
			var r response
			if err := dec.Decode(&r); err != nil {
				break
			}
			p.resps <- r
		}
		_ = cmd.Wait()
		close(p.dead)
	}()
	return p, nil
}

// call sends req and waits up to timeout for the answer. On a timeout or
// a dead worker it kills the worker and returns errWorkerLost (wrapped,
// with the worker's last stderr lines).
func (p *workerProc) call(req request, timeout time.Duration) (response, error) {
	if err := p.enc.Encode(req); err != nil {
		p.kill()
		return response{}, fmt.Errorf("%w: %v%s", errWorkerLost, err, p.stderr.note())
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r := <-p.resps:
		return r, nil
	case <-p.dead:
		select { // the answer may have arrived just before the exit
		case r := <-p.resps:
			return r, nil
		default:
		}
		return response{}, fmt.Errorf("%w: it exited during %s%s", errWorkerLost, req.Op, p.stderr.note())
	case <-t.C:
		p.kill()
		return response{}, fmt.Errorf("%w: %s after %v: %w", errWorkerLost, req.Op, timeout, errWorkerHung)
	}
}

func (p *workerProc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.dead
}

// close asks the worker to quit and waits a little before killing it.
func (p *workerProc) close() {
	_ = p.enc.Encode(request{Op: opQuit})
	_ = p.stdin.Close()
	select {
	case <-p.dead:
	case <-time.After(2 * time.Second):
		p.kill()
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(b)
	if over := t.buf.Len() - t.max; over > 0 {
		t.buf.Next(over)
	}
	return len(b), nil
}

func (t *tailBuffer) note() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(t.buf.String())
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return " (worker stderr: " + strings.Join(lines, " | ") + ")"
}
