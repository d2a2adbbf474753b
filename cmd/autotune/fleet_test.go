package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/gemvtune/gemvtune"
	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/tuner"
)

// TestShardPushPullMerge is the fleet recipe without GPUs: the records of
// a two-part tune (each part's jobs from tuner.Shard) are pushed from two
// caches as two artifacts, pulled into an empty cache, and every lookup
// there answers as the cache of one whole tune does.
func TestShardPushPullMerge(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	repo := strings.TrimPrefix(srv.URL, "http://") + "/gemvtune/tunes"
	jobs := []tuner.Job{{Format: "q4_0", Rows: 4096, Cols: 4096}, {Format: "q4_0", Rows: 14336, Cols: 4096},
		{Format: "q8_0", Rows: 4096, Cols: 14336}, {Format: "q4_K", Rows: 1024, Cols: 4096}, {Format: "bf16", Rows: 6144, Cols: 4096}}
	ids := map[string]string{"q4_0": "r2f0u2s2w8l1", "q8_0": "r2f0u2s2w8l1", "q4_K": "r1f0u2s3w8l1", "bf16": "r1f0u4s2w8"}
	recOf := func(j tuner.Job) cache.Record { return testRecord(t, "sm_90", j.Format, j.Rows, j.Cols, ids[j.Format]) }
	var all []cache.Record
	for _, j := range jobs {
		all = append(all, recOf(j))
	}
	whole := cacheWith(t, all...)
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		var part []cache.Record
		for _, j := range tuner.Shard(jobs, tuner.ShardSpec{I: i, N: 2}) {
			part = append(part, recOf(j))
		}
		var out, errw bytes.Buffer
		if err := pushMain(ctx, []string{fmt.Sprintf("%s:h200-part-%d", repo, i), "--insecure", "--cache", cacheWith(t, part...)}, &out, &errw); err != nil {
			t.Fatalf("push part %d: %v (%s)", i, err, errw.String())
		}
		if !strings.Contains(out.String(), fmt.Sprintf("sm_90 h200 (%d records)", len(part))) {
			t.Errorf("push output: %s", out.String())
		}
	}
	merged := filepath.Join(t.TempDir(), "merged.db")
	for i := 0; i < 2; i++ {
		var out, errw bytes.Buffer
		if err := pullMain(ctx, []string{fmt.Sprintf("%s:h200-part-%d", repo, i), "--insecure", "--model", "NVIDIA H200", "--cache", merged}, &out, &errw); err != nil {
			t.Fatalf("pull part %d: %v (%s)", i, err, errw.String())
		}
		if !strings.Contains(out.String(), "pulled ") || !strings.Contains(out.String(), "into "+merged) {
			t.Errorf("pull output: %s", out.String())
		}
	}
	open := func(path string) *gemvtune.Policy {
		p, err := gemvtune.Open(&gemvtune.Options{CachePath: path, GPUName: "NVIDIA H200", LookupEnv: noEnv})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b := open(whole), open(merged)
	for _, j := range append(jobs, tuner.Job{Format: "q4_0", Rows: 8192, Cols: 4096}) {
		ca, _ := a.Lookup("sm_90", j.Format, j.Rows, j.Cols)
		cb, _ := b.Lookup("sm_90", j.Format, j.Rows, j.Cols)
		if ca.ID != cb.ID || ca.Source != cb.Source || !bytes.Equal(ca.Cubin, cb.Cubin) {
			t.Errorf("%s %s: whole tune %s (%s), merged parts %s (%s)", j.Format, j.Shape(), ca.ID, ca.Source, cb.ID, cb.Source)
		}
	}

	// Another GPU model's filter finds nothing, and says what there is.
	var out, errw bytes.Buffer
	err := pullMain(ctx, []string{repo + ":h200-part-0", "--insecure", "--model", "h20", "--cache", merged}, &out, &errw)
	if err == nil || !strings.Contains(err.Error(), "no part for h20 (it holds sm_90 h200") {
		t.Errorf("pull --model h20: %v", err)
	}
}

func TestFleetUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		run  func(context.Context, []string, io.Writer, io.Writer) error
		args []string
		want string
	}{
		{pushMain, nil, "push: REF is required"},
		{pullMain, []string{"a/b:c", "--arch", "90"}, "pull: --arch"},
		{pullMain, []string{"a/b:c", "d"}, "unexpected"},
	} {
		var out, errw bytes.Buffer
		err := tc.run(context.Background(), tc.args, &out, &errw)
		var u usageError
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &u) {
			t.Errorf("%v: %v, want the usage error %q", tc.args, err, tc.want)
		}
	}
}
