package tuner

import (
	"compress/gzip"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune/space"
)

// replayJob is one job of a recorded exhaustive run, compacted for the
// replay: every measured candidate's samples (µs, to 0.001) and what the
// static stage knew of it, and the run's stock and winner.
type replayJob struct {
	Format string            `json:"format"`
	Rows   int               `json:"rows"`
	Cols   int               `json:"cols"`
	Stock  string            `json:"stock"`
	Winner string            `json:"winner"`
	Cands  []replayCandidate `json:"candidates"`
}

type replayCandidate struct {
	ID        string    `json:"id"`
	Class     string    `json:"class"`
	Registers int       `json:"regs,omitempty"`
	Blocks    int       `json:"blocks,omitempty"`
	Samples   []float64 `json:"us"`
}

// replayFixtures are the compacted exhaustive runs the replay evaluation
// reads (tuner/testdata, docs/tuner.md): run5, run13, run18, run24 and
// run26 of docs/data.md, llama-3-8b on the H200 in five spaces (run24 and
// run26: eight formats; run26: the kernels of 2026-12-02).
var replayFixtures = []string{"run5", "run13", "run18", "run24", "run26"}

func loadReplay(t testing.TB, name string) []replayJob {
	t.Helper()
	var jobs []replayJob
	if err := readGzipJSON(filepath.Join("testdata", name+".replay.json.gz"), &jobs); err != nil {
		t.Fatalf("replay fixture %s: %v (TestMakeReplayFixture makes it)", name, err)
	}
	return jobs
}

// readGzipJSON decodes the gzipped JSON file at path into v.
func readGzipJSON(path string, v any) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	return json.NewDecoder(zr).Decode(v)
}

// TestMakeReplayFixture writes testdata/NAME.replay.json.gz from the
// `autotune --json` output of an exhaustive run named by
// $GEMV_REPLAY_FROM (e.g. run18.json.gz, from docs/data.md's commit):
//
//	GEMV_REPLAY_FROM=/tmp/run18.json.gz go test ./tuner -run TestMakeReplayFixture
func TestMakeReplayFixture(t *testing.T) {
	from := os.Getenv("GEMV_REPLAY_FROM")
	if from == "" {
		t.Skip("skipping: set GEMV_REPLAY_FROM to an exhaustive run's --json output to make its replay fixture")
	}
	var ds []Decision
	if err := readGzipJSON(from, &ds); err != nil {
		t.Fatal(err)
	}
	var jobs []replayJob
	for _, d := range ds {
		j := replayJob{Format: d.Format, Rows: d.Rows, Cols: d.Cols, Stock: d.Stock.ID, Winner: d.Winner.ID}
		if j.Stock == "" {
			j.Stock = space.Stock.ID()
		}
		for _, c := range d.Candidates {
			if c.Status != StatusOK || len(c.Samples) == 0 {
				continue
			}
			rc := replayCandidate{ID: c.ID, Class: c.Class, Registers: c.Registers, Blocks: c.BlocksPerSM}
			for _, v := range c.Samples {
				rc.Samples = append(rc.Samples, math.Round(v*1000)/1000)
			}
			j.Cands = append(j.Cands, rc)
		}
		jobs = append(jobs, j)
	}
	name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(from), ".gz"), ".json")
	out, err := os.Create(filepath.Join("testdata", name+".replay.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	zw, _ := gzip.NewWriterLevel(out, gzip.BestCompression)
	if err := json.NewEncoder(zw).Encode(jobs); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
