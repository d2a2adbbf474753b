// Package artifact publishes a tune as an OCI artifact and fetches it back:
// the records of a cache export, one layer per (arch, GPU model), with the
// tool version, the kernel sources and the GPU models as annotations, so
// that a fleet tunes once per GPU model and its nodes pull the result at
// start-up from the registry they already run (docs/fleet.md).
//
// Merging what is pulled into a cache is the cache's Import: the same
// rules as `autotune import`.
package artifact

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/internal/termtext"
	"github.com/gemvtune/gemvtune/variants"
)

// The media types of a tune artifact (an OCI image manifest, version 1.1).
const (
	// ArtifactType is the manifest's artifactType.
	ArtifactType = "application/vnd.gemvtune.tune.v1"
	// ConfigMediaType is the config blob's: a Config as JSON.
	ConfigMediaType = "application/vnd.gemvtune.tune.config.v1+json"
	// LayerMediaType is every layer's: one cache export (cache.ExportVersion
	// 2) of one arch and GPU model, gzipped JSON.
	LayerMediaType = "application/vnd.gemvtune.cache.export.v2+gzip"
)

// Schema is the artifact schema this package writes and the newest it
// reads; Config.Schema says which one an artifact has.
const Schema = 1

// Annotation keys on the manifest and its layers.
const (
	AnnotationCreated     = "org.opencontainers.image.created"
	AnnotationTitle       = "org.opencontainers.image.title"
	AnnotationToolVersion = "dev.gemvtune.tool.version"
	AnnotationSources     = "dev.gemvtune.kernel.sources" // "q4_0=<hash>,q4_K=<hash>,..." of the records
	AnnotationModels      = "dev.gemvtune.gpu.models"     // "h200,h100-80gb-hbm3"
	AnnotationArchs       = "dev.gemvtune.archs"          // "sm_90"
	AnnotationArch        = "dev.gemvtune.arch"           // a layer's
	AnnotationModel       = "dev.gemvtune.gpu.model"      // a layer's
	AnnotationRecords     = "dev.gemvtune.records"        // a layer's record count
)

// Limits on what a pull reads before it has checked it.
const (
	maxConfigBytes = 1 << 20
	maxLayerBytes  = 256 << 20 // gzipped, as stored
	maxExportBytes = 1 << 30   // a layer's export, unzipped
	maxLayers      = 4096
	// maxQuoted bounds what of a registry's strings an error quotes.
	maxQuoted = 200
)

// Config is the artifact's config blob: what the annotations say, in a
// form a program reads without parsing strings.
type Config struct {
	Schema      int       `json:"schema"` // Schema when written
	ToolVersion string    `json:"tool_version"`
	Created     time.Time `json:"created"`
	// Sources maps each format of the records to its kernel source hash
	// (variants.Family.SourceHash) as the records carry it; a format whose
	// records carry several has them joined by "+".
	Sources map[string]string `json:"kernel_sources"`
	Parts   []Part            `json:"parts"` // one per layer, in layer order
}

// Part is one layer: the records of one arch and GPU model.
type Part struct {
	Arch    string `json:"arch"`
	Model   string `json:"gpu_model"`
	Records int    `json:"records"`
}

// Artifact is a tune ready to push: its config and one gzipped export per
// part, in the same order.
type Artifact struct {
	Config Config
	Layers [][]byte
}

// Build splits e into one part per (arch, GPU model), in sorted order, each
// with the cubins its records use. An export with no records is an error:
// there would be nothing to publish.
func Build(e *cache.Export) (*Artifact, error) {
	if len(e.Records) == 0 {
		return nil, errors.New("nothing to publish: the cache (after the --arch and --model filters) holds no records")
	}
	type partKey struct{ arch, model string }
	groups := map[partKey][]cache.Record{}
	sources := map[string][]string{}
	for _, r := range e.Records {
		k := partKey{r.Arch, r.Model}
		if k.model == "" {
			k.model = cache.NormalizeModel(r.GPUName)
		}
		groups[k] = append(groups[k], r)
		if !slices.Contains(sources[r.Format], r.SourceHash) {
			sources[r.Format] = append(sources[r.Format], r.SourceHash)
		}
	}
	keys := make([]partKey, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b partKey) int {
		return strings.Compare(a.arch+"\x00"+a.model, b.arch+"\x00"+b.model)
	})
	a := &Artifact{Config: Config{Schema: Schema, ToolVersion: e.ToolVersion, Created: e.Exported.UTC().Truncate(time.Second),
		Sources: map[string]string{}}}
	for f, hs := range sources {
		slices.Sort(hs)
		a.Config.Sources[f] = strings.Join(hs, "+")
	}
	for _, k := range keys {
		part := &cache.Export{Kind: e.Kind, Version: cache.ExportVersion, ToolVersion: e.ToolVersion, Exported: e.Exported,
			Records: groups[k], Cubins: map[string][]byte{}}
		for _, r := range part.Records {
			for _, h := range []string{r.CubinHash, exactCubin(r)} {
				if b, ok := e.Cubins[h]; ok && h != "" {
					part.Cubins[h] = b
				}
			}
		}
		layer, err := gzipExport(part)
		if err != nil {
			return nil, err
		}
		a.Layers = append(a.Layers, layer)
		a.Config.Parts = append(a.Config.Parts, Part{Arch: k.arch, Model: k.model, Records: len(part.Records)})
	}
	return a, nil
}

func exactCubin(r cache.Record) string {
	if r.Exact == nil {
		return ""
	}
	return r.Exact.CubinHash
}

// gzipExport is e as gzipped JSON, the same bytes for the same export (no
// name or time in the gzip header).
func gzipExport(e *cache.Export) ([]byte, error) {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if err := json.NewEncoder(zw).Encode(e); err != nil {
		return nil, fmt.Errorf("encoding a layer: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compressing a layer: %w", err)
	}
	return b.Bytes(), nil
}

// annotations are the manifest's.
func (a *Artifact) annotations() map[string]string {
	var srcs, models, archs []string
	for f, h := range a.Config.Sources {
		srcs = append(srcs, f+"="+h)
	}
	for _, p := range a.Config.Parts {
		if !slices.Contains(models, p.Model) {
			models = append(models, p.Model)
		}
		if !slices.Contains(archs, p.Arch) {
			archs = append(archs, p.Arch)
		}
	}
	slices.Sort(srcs)
	slices.Sort(models)
	slices.Sort(archs)
	return map[string]string{
		AnnotationCreated:     a.Config.Created.Format(time.RFC3339),
		AnnotationToolVersion: a.Config.ToolVersion,
		AnnotationSources:     strings.Join(srcs, ","),
		AnnotationModels:      strings.Join(models, ","),
		AnnotationArchs:       strings.Join(archs, ","),
	}
}

// layerAnnotations are part i's.
func (a *Artifact) layerAnnotations(i int) map[string]string {
	p := a.Config.Parts[i]
	return map[string]string{
		AnnotationTitle:   p.Arch + "-" + p.Model + ".json.gz",
		AnnotationArch:    p.Arch,
		AnnotationModel:   p.Model,
		AnnotationRecords: strconv.Itoa(p.Records),
	}
}

// readConfig decodes and checks a config blob.
func readConfig(b []byte) (Config, error) {
	var c Config
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("its config is not a gemvtune tune config: %w", err)
	}
	switch {
	case c.Schema > Schema:
		return c, fmt.Errorf("it was published by a newer gemvtune (artifact schema %d, tool %s); this autotune (%s) reads schema %d: upgrade autotune to pull it",
			c.Schema, termtext.Field(c.ToolVersion, maxQuoted), cache.ToolVersion, Schema)
	case c.Schema < 1:
		return c, fmt.Errorf("its config has schema %d; this autotune reads schema %d", c.Schema, Schema)
	}
	return c, nil
}

// readLayer unzips and decodes one layer, bounded.
func readLayer(gz []byte) (*cache.Export, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("not gzip: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(zr, maxExportBytes+1))
	if err != nil {
		return nil, fmt.Errorf("unzipping: %w", err)
	}
	if len(data) > maxExportBytes {
		return nil, fmt.Errorf("unzips to more than %d MiB", maxExportBytes>>20)
	}
	return cache.ReadExport(bytes.NewReader(data))
}

// SourcesDiffer lists the formats whose kernel sources in c differ from
// this build's: their records are stale here until autotune refreshes or
// re-tunes them.
func SourcesDiffer(c Config) []string {
	var out []string
	for _, f := range variants.FormatNames {
		h, ok := c.Sources[f]
		if !ok {
			continue
		}
		if fam, err := variants.FamilyOf(f); err == nil && h != fam.SourceHash() {
			out = append(out, f)
		}
	}
	return out
}
