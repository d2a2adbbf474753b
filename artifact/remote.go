package artifact

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/gemvtune/gemvtune/cache"
	"github.com/gemvtune/gemvtune/internal/termtext"
)

// Options are how Push and Pull reach a registry.
type Options struct {
	// Insecure allows plain HTTP (a registry on the loopback address or a
	// lab network). Without it every request is HTTPS, whatever the host.
	Insecure bool
	// Keychain resolves credentials; nil is authn.DefaultKeychain: the
	// docker config ($DOCKER_CONFIG/config.json, else ~/.docker/config.json)
	// with its credential helpers, as docker and podman log in.
	Keychain authn.Keychain
	// Transport is the HTTP transport; nil is http.DefaultTransport.
	Transport http.RoundTripper
}

// httpsOnly refuses plain-HTTP requests unless Insecure was given, and
// remembers that it did, so the error can say why.
type httpsOnly struct {
	next    http.RoundTripper
	refused atomic.Bool
}

var errPlainHTTP = errors.New("plain HTTP refused")

func (h *httpsOnly) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme != "https" {
		h.refused.Store(true)
		return nil, errPlainHTTP
	}
	return h.next.RoundTrip(r)
}

// client is one Push or Pull: the reference and the remote options.
type client struct {
	ref   name.Reference
	opts  []remote.Option
	https *httpsOnly
}

func newClient(ctx context.Context, ref string, o Options) (*client, error) {
	var nopts []name.Option
	if o.Insecure {
		nopts = append(nopts, name.Insecure)
	}
	r, err := name.ParseReference(ref, nopts...)
	if err != nil {
		return nil, fmt.Errorf("reference %q: %s (want REGISTRY/REPOSITORY[:TAG|@DIGEST], e.g. registry.example:5000/tunes:llama-3-8b-h200)",
			termtext.Field(ref, maxQuoted), termtext.Field(err.Error(), maxQuoted))
	}
	kc := o.Keychain
	if kc == nil {
		kc = authn.DefaultKeychain
	}
	t := o.Transport
	if t == nil {
		t = http.DefaultTransport
	}
	c := &client{ref: r}
	if !o.Insecure {
		c.https = &httpsOnly{next: t}
		t = c.https
	}
	c.opts = []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(kc), remote.WithTransport(t),
		remote.WithUserAgent("gemvtune/" + cache.ToolVersion)}
	return c, nil
}

// fail turns a registry error into one line naming the reference.
func (c *client) fail(what string, err error) error {
	if c.https != nil && c.https.refused.Load() {
		return fmt.Errorf("%s %s: the registry %s answered only over plain HTTP: pass --insecure for a local registry (credentials and tunes would travel unencrypted)",
			what, c.ref, c.ref.Context().RegistryStr())
	}
	var te *transport.Error
	if errors.As(err, &te) {
		switch te.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Errorf("%s %s: the registry refused the credentials (HTTP %d): log in with docker login or podman login %s, or set DOCKER_CONFIG",
				what, c.ref, te.StatusCode, c.ref.Context().RegistryStr())
		case http.StatusNotFound:
			return fmt.Errorf("%s %s: not found in the registry (HTTP 404)", what, c.ref)
		}
	}
	return fmt.Errorf("%s %s: %s", what, c.ref, termtext.Field(err.Error(), maxQuoted))
}

// Push writes a to ref and returns the manifest's digest.
func Push(ctx context.Context, ref string, a *Artifact, o Options) (string, error) {
	c, err := newClient(ctx, ref, o)
	if err != nil {
		return "", fmt.Errorf("push: %w", err)
	}
	img, err := a.image()
	if err != nil {
		return "", err
	}
	if err := remote.Write(c.ref, img, c.opts...); err != nil {
		return "", c.fail("push", err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	return d.String(), nil
}

// Pulled is what Pull fetched: the config and one export per part it kept.
type Pulled struct {
	Ref     string // the reference with the manifest's digest
	Config  Config
	Parts   []Part
	Exports []*cache.Export
}

// Pull fetches the tune at ref, checks its media types and schema, and
// reads the parts keep accepts (nil keeps all), each verified against its
// digest in the manifest. Nothing is merged anywhere: the caller imports
// the exports.
func Pull(ctx context.Context, ref string, o Options, keep func(Part) bool) (*Pulled, error) {
	c, err := newClient(ctx, ref, o)
	if err != nil {
		return nil, fmt.Errorf("pull: %w", err)
	}
	desc, err := remote.Get(c.ref, c.opts...)
	if err != nil {
		return nil, c.fail("pull", err)
	}
	if desc.MediaType != types.OCIManifestSchema1 {
		return nil, fmt.Errorf("pull %s: it is a %s, not a gemvtune tune (an OCI manifest of artifact type %s)", c.ref, termtext.Field(string(desc.MediaType), maxQuoted), ArtifactType)
	}
	m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil {
		return nil, fmt.Errorf("pull %s: its manifest does not decode: %v", c.ref, err)
	}
	if m.ArtifactType != ArtifactType || m.Config.MediaType != ConfigMediaType {
		return nil, fmt.Errorf("pull %s: it is not a gemvtune tune: artifact type %q with config %q (want %s with %s)",
			c.ref, termtext.Field(m.ArtifactType, maxQuoted), termtext.Field(string(m.Config.MediaType), maxQuoted), ArtifactType, ConfigMediaType)
	}
	if len(m.Layers) > maxLayers {
		return nil, fmt.Errorf("pull %s: %d layers, more than %d", c.ref, len(m.Layers), maxLayers)
	}
	raw, err := c.blob(m.Config, maxConfigBytes)
	if err != nil {
		return nil, c.fail("pull (config)", err)
	}
	cfg, err := readConfig(raw)
	if err != nil {
		return nil, fmt.Errorf("pull %s: %w", c.ref, err)
	}
	if len(cfg.Parts) != len(m.Layers) {
		return nil, fmt.Errorf("pull %s: its config lists %d parts for %d layers", c.ref, len(cfg.Parts), len(m.Layers))
	}
	p := &Pulled{Ref: c.ref.Context().Digest(desc.Digest.String()).String(), Config: cfg}
	for i, l := range m.Layers {
		part := cfg.Parts[i]
		if l.MediaType != LayerMediaType {
			return nil, fmt.Errorf("pull %s: layer %d (%s %s) has media type %q; this autotune reads %s",
				c.ref, i, part.Arch, part.Model, termtext.Field(string(l.MediaType), maxQuoted), LayerMediaType)
		}
		if keep != nil && !keep(part) {
			continue
		}
		gz, err := c.blob(l, maxLayerBytes)
		if err != nil {
			return nil, c.fail(fmt.Sprintf("pull (layer %d, %s %s)", i, part.Arch, part.Model), err)
		}
		e, err := readLayer(gz)
		if err != nil {
			return nil, fmt.Errorf("pull %s: layer %d (%s %s): %w", c.ref, i, part.Arch, part.Model, err)
		}
		p.Parts = append(p.Parts, part)
		p.Exports = append(p.Exports, e)
	}
	return p, nil
}

// blob reads the blob d describes, at most limit bytes, and fails unless
// its sha256 is d's digest.
func (c *client) blob(d v1.Descriptor, limit int64) ([]byte, error) {
	if d.Size > limit || d.Size < 0 {
		return nil, fmt.Errorf("blob %s is %d bytes, more than the %d accepted", d.Digest, d.Size, limit)
	}
	l, err := remote.Layer(c.ref.Context().Digest(d.Digest.String()), c.opts...)
	if err != nil {
		return nil, err
	}
	rc, err := l.Compressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", d.Digest, err)
	}
	if int64(len(b)) != d.Size {
		return nil, fmt.Errorf("blob %s: %d bytes, the manifest says %d", d.Digest, len(b), d.Size)
	}
	if h, _, err := v1.SHA256(bytes.NewReader(b)); err != nil || h != d.Digest {
		return nil, fmt.Errorf("blob %s: its content has digest %s: corrupted in the registry or on the way", d.Digest, h)
	}
	return b, nil
}

// image is a as a v1.Image for remote.Write: an OCI 1.1 manifest of
// artifact type ArtifactType whose config is the Config.
func (a *Artifact) image() (v1.Image, error) { return a.imageWith(LayerMediaType) }

// imageWith is image with layers of media type lt (tests write others).
func (a *Artifact) imageWith(lt types.MediaType) (v1.Image, error) {
	if len(a.Layers) != len(a.Config.Parts) || len(a.Layers) == 0 {
		return nil, fmt.Errorf("artifact: %d layers for %d parts in its config (Build makes one of each per arch and GPU model)", len(a.Layers), len(a.Config.Parts))
	}
	cfg, err := json.Marshal(a.Config)
	if err != nil {
		return nil, err
	}
	ai := &artifactImage{config: cfg, layers: map[v1.Hash]v1.Layer{}}
	cd, size, err := v1.SHA256(bytes.NewReader(cfg))
	if err != nil {
		return nil, err
	}
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  ArtifactType,
		Config:        v1.Descriptor{MediaType: ConfigMediaType, Size: size, Digest: cd},
		Annotations:   a.annotations(),
	}
	for i, b := range a.Layers {
		l := static.NewLayer(b, lt)
		d, err := l.Digest()
		if err != nil {
			return nil, err
		}
		ai.layers[d] = l
		m.Layers = append(m.Layers, v1.Descriptor{MediaType: lt, Size: int64(len(b)), Digest: d,
			Annotations: a.layerAnnotations(i)})
	}
	if ai.manifest, err = json.Marshal(m); err != nil {
		return nil, err
	}
	return partial.CompressedToImage(ai)
}

// artifactImage is the minimal image core partial.CompressedToImage needs.
type artifactImage struct {
	manifest, config []byte
	layers           map[v1.Hash]v1.Layer
}

func (a *artifactImage) RawConfigFile() ([]byte, error) { return a.config, nil }
func (a *artifactImage) MediaType() (types.MediaType, error) {
	return types.OCIManifestSchema1, nil
}
func (a *artifactImage) RawManifest() ([]byte, error) { return a.manifest, nil }
func (a *artifactImage) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	if l, ok := a.layers[h]; ok {
		return l, nil
	}
	if cd, _, _ := v1.SHA256(bytes.NewReader(a.config)); cd == h {
		return static.NewLayer(a.config, ConfigMediaType), nil
	}
	return nil, fmt.Errorf("no blob %s in this artifact", h)
}
