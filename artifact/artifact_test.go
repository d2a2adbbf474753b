package artifact_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gemvtune/gemvtune/artifact"
	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/internal/cachetest"
	"github.com/gemvtune/gemvtune/variants"
)

// export writes recs into a fresh cache and exports it.
func export(t *testing.T, recs ...cache.Record) *cache.Export {
	t.Helper()
	db, err := cache.Open(cachetest.Write(t, recs...), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	e, err := db.Export("")
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func fleetRecords(t *testing.T) []cache.Record {
	return []cache.Record{
		cachetest.Record(t, "sm_90", "NVIDIA H200", "q4_K", 4096, 4096, "r1f0u2s3w8l1"),
		cachetest.Record(t, "sm_90", "NVIDIA H200", "q8_0", 14336, 4096, "r2f0u2s2w8l1"),
		cachetest.Record(t, "sm_90", "NVIDIA H100 80GB HBM3", "q4_K", 4096, 4096, "r2f0u2s2w8l1"),
		cachetest.Record(t, "sm_80", "NVIDIA A100-SXM4-80GB", "q4_0", 4096, 4096, "r1f0u4s1w8l2"),
	}
}

// startRegistry serves an in-memory OCI registry on the loopback address,
// behind wrap (nil: none), and returns its host:port.
func startRegistry(t *testing.T, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	var h http.Handler = registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

var local = artifact.Options{Insecure: true}

func TestPushPullMerge(t *testing.T) {
	host := startRegistry(t, nil)
	recs := fleetRecords(t)
	e := export(t, recs...)
	a, err := artifact.Build(e)
	if err != nil {
		t.Fatal(err)
	}
	ref := host + "/gemvtune/tunes:llama-3-8b"
	ctx := context.Background()
	digest, err := artifact.Push(ctx, ref, a, local)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(digest, "sha256:") {
		t.Errorf("digest %q", digest)
	}

	// The manifest: artifact type, config, one layer per (arch, model), annotations.
	r, _ := name.ParseReference(ref, name.Insecure)
	desc, err := remote.Get(r)
	if err != nil {
		t.Fatal(err)
	}
	m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil {
		t.Fatal(err)
	}
	if m.ArtifactType != artifact.ArtifactType || m.Config.MediaType != artifact.ConfigMediaType {
		t.Errorf("artifact type %q, config %q", m.ArtifactType, m.Config.MediaType)
	}
	var parts []string
	for _, l := range m.Layers {
		if l.MediaType != artifact.LayerMediaType {
			t.Errorf("layer media type %q", l.MediaType)
		}
		parts = append(parts, l.Annotations[artifact.AnnotationArch]+"/"+l.Annotations[artifact.AnnotationModel]+"/"+l.Annotations[artifact.AnnotationRecords])
	}
	if got := strings.Join(parts, " "); got != "sm_80/a100-sxm4-80gb/1 sm_90/h100-80gb-hbm3/1 sm_90/h200/2" {
		t.Errorf("layers %s", got)
	}
	for k, want := range map[string]string{
		artifact.AnnotationModels:      "a100-sxm4-80gb,h100-80gb-hbm3,h200",
		artifact.AnnotationArchs:       "sm_80,sm_90",
		artifact.AnnotationToolVersion: cache.ToolVersion,
	} {
		if m.Annotations[k] != want {
			t.Errorf("annotation %s = %q, want %q", k, m.Annotations[k], want)
		}
	}
	for _, f := range []string{"q4_K", "q8_0", "q4_0"} {
		fam, _ := variants.FamilyOf(f)
		if !strings.Contains(m.Annotations[artifact.AnnotationSources], f+"="+fam.SourceHash()) {
			t.Errorf("kernel sources %q lack %s", m.Annotations[artifact.AnnotationSources], f)
		}
	}
	if _, err := time.Parse(time.RFC3339, m.Annotations[artifact.AnnotationCreated]); err != nil {
		t.Errorf("created: %v", err)
	}

	// Pull everything into an empty cache: the same records.
	p, err := artifact.Pull(ctx, ref, local, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(p.Ref, digest) || len(p.Exports) != 3 || len(artifact.SourcesDiffer(p.Config)) != 0 {
		t.Fatalf("pulled %s, %d parts, sources differ %v", p.Ref, len(p.Exports), artifact.SourcesDiffer(p.Config))
	}
	got := importAll(t, filepath.Join(t.TempDir(), "empty.db"), p)
	if len(got) != len(recs) {
		t.Fatalf("merged %d records, want %d", len(got), len(recs))
	}
	for i, r := range got {
		if r.Key.String() != sortedKeys(recs)[i] || r.WinnerID == "" || r.CubinHash == "" {
			t.Errorf("record %d: %s %s", i, r.Key, r.WinnerID)
		}
	}

	// One model only, as an engine's init container pulls it.
	p, err = artifact.Pull(ctx, ref, local, func(pt artifact.Part) bool { return pt.Model == "h200" })
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Parts) != 1 || p.Parts[0].Records != 2 || len(p.Exports[0].Records) != 2 {
		t.Fatalf("h200 only: %+v", p.Parts)
	}
}

// importAll merges every pulled export into the cache at path (the import
// rules) and returns its records.
func importAll(t *testing.T, path string, p *artifact.Pulled) []cache.Record {
	t.Helper()
	db, err := cache.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, e := range p.Exports {
		s, err := db.Import(e)
		if err != nil || len(s.Skipped) > 0 || len(s.Conflicts) > 0 {
			t.Fatalf("import: %v %s", err, s)
		}
	}
	all, err := db.All("")
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// sortedKeys are the records' keys, with their models, in the order the
// cache walks them (arch, model, format, shape).
func sortedKeys(recs []cache.Record) []string {
	var keys []string
	for _, r := range recs {
		k := r.Key
		k.Model = cache.NormalizeModel(r.GPUName)
		keys = append(keys, k.String())
	}
	slices.Sort(keys)
	return keys
}

// The registry answers, a blob is tampered with on the way back; the pull
// names the digest and merges nothing.
func TestPullCorruptedBlob(t *testing.T) {
	e := export(t, fleetRecords(t)...)
	a, err := artifact.Build(e)
	if err != nil {
		t.Fatal(err)
	}
	var corrupt string // the blob digest to damage
	host := startRegistry(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if corrupt == "" || r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/blobs/"+corrupt) {
				h.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			body := rec.Body.Bytes()
			body[len(body)/2] ^= 0x40
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			w.Write(body)
		})
	})
	ref := host + "/tunes:corrupt"
	if _, err := artifact.Push(context.Background(), ref, a, local); err != nil {
		t.Fatal(err)
	}
	r, _ := name.ParseReference(ref, name.Insecure)
	desc, err := remote.Get(r)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	for _, target := range []v1.Hash{m.Layers[1].Digest, m.Config.Digest} {
		corrupt = target.String()
		_, err = artifact.Pull(context.Background(), ref, local, nil)
		if err == nil || !strings.Contains(err.Error(), target.String()) {
			t.Errorf("corrupted blob %s: pull error %v, want one naming it", target, err)
		}
		oneLine(t, err)
	}
}

// A plain container image, an artifact of a newer schema and one with an
// unknown layer type are refused with what they are.
func TestPullRefuses(t *testing.T) {
	host := startRegistry(t, nil)
	ctx := context.Background()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := name.ParseReference(host+"/tunes:image", name.Insecure)
	if err := remote.Write(r, img); err != nil {
		t.Fatal(err)
	}
	e := export(t, fleetRecords(t)...)
	newer, _ := artifact.Build(e)
	newer.Config.Schema = artifact.Schema + 1
	if _, err := artifact.Push(ctx, host+"/tunes:newer", newer, local); err != nil {
		t.Fatal(err)
	}
	short, _ := artifact.Build(e)
	short.Config.Parts = short.Config.Parts[:1]
	if _, err := artifact.Push(ctx, host+"/tunes:short", short, local); err == nil || !strings.Contains(err.Error(), "3 layers for 1 parts") {
		t.Errorf("push of an artifact whose config lists fewer parts than layers: %v", err)
	}
	for _, tc := range []struct{ ref, want string }{
		{host + "/tunes:image", "not a gemvtune tune"},
		{host + "/tunes:newer", "newer gemvtune (artifact schema 2"},
		{host + "/tunes:missing", "not found"},
		{"Not A Reference", "want REGISTRY/REPOSITORY"},
	} {
		_, err := artifact.Pull(ctx, tc.ref, local, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("pull %s: %v, want %q", tc.ref, err, tc.want)
		}
		oneLine(t, err)
	}
}

// A registry that wants credentials: without them, and with wrong ones from
// the docker config, the push fails in one line; with the right ones it
// succeeds, read from $DOCKER_CONFIG as docker login writes them.
func TestAuth(t *testing.T) {
	host := startRegistry(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != "tuner" || p != "s3cret" {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	e := export(t, fleetRecords(t)...)
	a, _ := artifact.Build(e)
	ctx := context.Background()
	ref := host + "/tunes:auth"
	dockerConfig := func(user, pass string) {
		dir := t.TempDir()
		cfg := map[string]any{"auths": map[string]any{host: map[string]string{
			"auth": base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))}}}
		b, _ := json.Marshal(cfg)
		if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("DOCKER_CONFIG", dir)
	}
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials at all
	for _, creds := range [][2]string{{"", ""}, {"tuner", "wrong"}} {
		if creds[0] != "" {
			dockerConfig(creds[0], creds[1])
		}
		_, err := artifact.Push(ctx, ref, a, local)
		if err == nil || !strings.Contains(err.Error(), "refused the credentials (HTTP 401)") {
			t.Errorf("push with %v: %v, want a refusal", creds, err)
		}
		oneLine(t, err)
	}
	dockerConfig("tuner", "s3cret")
	if _, err := artifact.Push(ctx, ref, a, local); err != nil {
		t.Fatal(err)
	}
	if _, err := artifact.Pull(ctx, ref, local, nil); err != nil {
		t.Fatal(err)
	}
}

// Without Insecure nothing travels over plain HTTP, even to the loopback
// address.
func TestPlainHTTPNeedsInsecure(t *testing.T) {
	host := startRegistry(t, nil)
	e := export(t, fleetRecords(t)...)
	a, _ := artifact.Build(e)
	_, err := artifact.Push(context.Background(), host+"/tunes:x", a, artifact.Options{})
	if err == nil || !strings.Contains(err.Error(), "pass --insecure") {
		t.Fatalf("push over plain HTTP without Insecure: %v", err)
	}
	oneLine(t, err)
}

func TestBuildEmpty(t *testing.T) {
	e := export(t)
	if _, err := artifact.Build(e); err == nil || !strings.Contains(err.Error(), "nothing to publish") {
		t.Errorf("Build of an empty export: %v", err)
	}
}

func oneLine(t *testing.T, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), "\n") {
		t.Errorf("error spans lines: %q", err)
	}
}
