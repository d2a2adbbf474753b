package artifact

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gemvtune/gemvtune/cache"
)

// A tune whose layers carry another media type (a newer export, say) is
// refused by what the layer is, before anything is read from it.
func TestPullRefusesUnknownLayerType(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	a, err := Build(&cache.Export{Kind: cache.ExportKind, Version: cache.ExportVersion, Exported: time.Now(),
		Records: []cache.Record{{Key: cache.Key{Arch: "sm_90", Format: "q4_0", Rows: 64, Cols: 64}, GPUName: "NVIDIA H200"}}})
	if err != nil {
		t.Fatal(err)
	}
	img, err := a.imageWith("application/vnd.gemvtune.cache.export.v3+gzip")
	if err != nil {
		t.Fatal(err)
	}
	ref := strings.TrimPrefix(srv.URL, "http://") + "/tunes:v3"
	r, _ := name.ParseReference(ref, name.Insecure)
	if err := remote.Write(r, img); err != nil {
		t.Fatal(err)
	}
	_, err = Pull(context.Background(), ref, Options{Insecure: true}, nil)
	if err == nil || !strings.Contains(err.Error(), `layer 0 (sm_90 h200) has media type "application/vnd.gemvtune.cache.export.v3+gzip"; this autotune reads `+LayerMediaType) {
		t.Errorf("pull of a newer layer type: %v", err)
	}
}
