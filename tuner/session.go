package tuner

import (
	"errors"
	"fmt"
	"time"

	"github.com/gemvtune/gemvtune/internal/gpu"
)

// session is the tuner's hold on one GPU: its lock, its measurement worker
// (restarted after a fault), and what must be re-sent to a new worker.
type session struct {
	info     gpu.Info
	lock     *gpuLock
	proc     *workerProc
	ceilCode []byte // cubin of the read-ceiling kernel
	ceiling  float64
	mods     []moduleSpec // loaded in the worker
	format   string       // the format whose modules are loaded
	shape    *request     // the current job's shape request
	nvml     *gpu.NVMLDevice
	restarts int
}

// open starts the worker and measures the read ceiling.
func (s *session) open() error {
	p, err := startWorker()
	if err != nil {
		return err
	}
	r, err := p.call(request{Op: opInit, Device: s.info.Ordinal, Ceiling: s.ceilCode}, 2*time.Minute)
	if err == nil && !r.OK {
		err = errors.New(r.Err)
	}
	if err != nil {
		p.kill()
		return fmt.Errorf("GPU %d (%s): %w", s.info.Ordinal, s.info.Name, err)
	}
	s.proc = p
	if s.ceiling == 0 {
		s.ceiling = r.CeilingGBs
	}
	return nil
}

// restart replaces a dead or poisoned worker and restores its modules and
// shape (the same seed, so the same data).
func (s *session) restart() error {
	if s.proc != nil {
		s.proc.kill()
		s.proc = nil
	}
	s.restarts++
	if err := s.open(); err != nil {
		return err
	}
	if len(s.mods) > 0 {
		if r, err := s.proc.call(request{Op: opModules, Modules: s.mods}, 5*time.Minute); err != nil || !r.OK {
			return fmt.Errorf("reloading modules after a restart: %v%s", err, r.Err)
		}
	}
	if s.shape != nil {
		r, err := s.proc.call(*s.shape, shapeTimeout(s.shape))
		if err != nil || !r.OK {
			return fmt.Errorf("restoring %s %dx%d after a restart: %v%s", s.shape.Format, s.shape.Rows, s.shape.Cols, err, r.Err)
		}
	}
	return nil
}

// shapeTimeout allows for making and uploading the data and the reference.
func shapeTimeout(r *request) time.Duration {
	return 2*time.Minute + time.Duration(r.Rows)*time.Duration(r.Cols)*time.Nanosecond
}

// call sends req; if the worker dies, hangs or answers Fatal, the worker is
// restarted and the answer (or a synthesised one) says what happened.
func (s *session) call(req request, timeout time.Duration) (response, error) {
	r, err := s.proc.call(req, timeout)
	if err != nil {
		status := "fault"
		if errors.Is(err, errWorkerHung) {
			status = "timeout"
		}
		r = response{Err: err.Error(), Status: status, Fatal: true}
	}
	if r.Fatal {
		if rerr := s.restart(); rerr != nil {
			return r, rerr
		}
	}
	return r, nil
}

func (s *session) clocks() Clocks {
	if s.nvml == nil {
		return Clocks{}
	}
	c, err := s.nvml.Clocks()
	if err != nil {
		return Clocks{}
	}
	return Clocks{SMMHz: c.SMMHz, MemMHz: c.MemMHz, TempC: c.TempC, Reasons: c.Reasons, Throttled: c.Throttled}
}

func (s *session) close() {
	if s.proc != nil {
		s.proc.close()
	}
	s.lock.unlock()
}

// measure implements measurer through the worker.
func (s *session) measure(ids []string, rounds int) (map[string][]float64, error) {
	r, err := s.call(request{Op: opMeasure, IDs: ids, Rounds: rounds}, 2*time.Minute+time.Duration(len(ids)*rounds)*50*time.Millisecond)
	if err != nil {
		return nil, err
	}
	if !r.OK {
		return nil, fmt.Errorf("measuring: %s", r.Err)
	}
	return r.Samples, nil
}
