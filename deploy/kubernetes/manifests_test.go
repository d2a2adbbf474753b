// Package kubernetes holds the Kubernetes recipe of docs/fleet.md; its test
// decodes every manifest strictly into the Kubernetes API types.
package kubernetes

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// kustomization is the part of kustomize's Kustomization this folder uses.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Images     []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	} `json:"images"`
}

func read(t *testing.T, name string, into any) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, into); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// env is a container's environment by name (values, or the field a
// variable is taken from).
func env(c corev1.Container) map[string]string {
	m := map[string]string{}
	for _, e := range c.Env {
		v := e.Value
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			v = "field:" + e.ValueFrom.FieldRef.FieldPath
		}
		m[e.Name] = v
	}
	return m
}

func TestManifestsDecodeStrictly(t *testing.T) {
	var k kustomization
	read(t, "kustomization.yaml", &k)
	if k.Kind != "Kustomization" || len(k.Images) != 1 || k.Images[0].Name != "gemvtune/autotune" {
		t.Errorf("kustomization: %+v", k)
	}
	yamls, _ := filepath.Glob("*.yaml")
	for _, f := range yamls {
		if f != "kustomization.yaml" && f != "rollback-patch.yaml" && !slices.Contains(k.Resources, f) {
			t.Errorf("%s is not among the kustomization's resources", f)
		}
	}

	var tune batchv1.Job
	read(t, "tune-job.yaml", &tune)
	ts := tune.Spec
	if ts.CompletionMode == nil || *ts.CompletionMode != batchv1.IndexedCompletion || ts.Completions == nil || ts.Parallelism == nil {
		t.Fatalf("tune job: not an Indexed Job with completions and parallelism: %+v", ts)
	}
	tc := ts.Template.Spec.Containers[0]
	te := env(tc)
	if te["SHARDS"] != strconv.Itoa(int(*ts.Completions)) || *ts.Parallelism != *ts.Completions {
		t.Errorf("tune job: SHARDS %q, completions %d, parallelism %d: want them equal", te["SHARDS"], *ts.Completions, *ts.Parallelism)
	}
	if te["JOB_COMPLETION_INDEX"] != "field:metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Errorf("tune job: JOB_COMPLETION_INDEX = %q", te["JOB_COMPLETION_INDEX"])
	}
	script := strings.Join(tc.Args, " ")
	for _, want := range []string{`--shard "$JOB_COMPLETION_INDEX/$SHARDS"`, `autotune push "$TUNE_REF-part-$JOB_COMPLETION_INDEX"`, "--model"} {
		if !strings.Contains(script, want) {
			t.Errorf("tune job's script lacks %q: %s", want, script)
		}
	}
	if _, ok := tc.Resources.Limits["nvidia.com/gpu"]; !ok {
		t.Error("tune job: no nvidia.com/gpu limit")
	}

	var pub batchv1.Job
	read(t, "publish-job.yaml", &pub)
	pc := pub.Spec.Template.Spec.Containers[0]
	ps := strings.Join(pc.Args, " ")
	if env(pc)["TUNE_REF"] != te["TUNE_REF"] || env(pc)["SHARDS"] != te["SHARDS"] ||
		!strings.Contains(ps, `autotune pull "$TUNE_REF-part-$i"`) || !strings.Contains(ps, `autotune push "$TUNE_REF"`) {
		t.Errorf("publish job does not merge the tune job's parts into TUNE_REF: %s", ps)
	}

	var eng appsv1.Deployment
	read(t, "engine-deployment.yaml", &eng)
	es := eng.Spec.Template.Spec
	if len(es.InitContainers) != 1 || len(es.Containers) != 1 {
		t.Fatalf("engine: %d init containers, %d containers", len(es.InitContainers), len(es.Containers))
	}
	ic := es.InitContainers[0]
	if env(ic)["TUNE_REF"] != te["TUNE_REF"] || !slices.Contains(ic.Command, "pull") || !slices.Contains(ic.Command, "$(TUNE_REF)") {
		t.Errorf("engine init container does not pull TUNE_REF: %v", ic.Command)
	}
	cachePath := ic.Command[slices.Index(ic.Command, "--cache")+1]
	if got := env(es.Containers[0])["GEMV_TUNE_CACHE"]; got != cachePath {
		t.Errorf("engine GEMV_TUNE_CACHE %q, init container pulls into %q", got, cachePath)
	}
	shared := func(c corev1.Container) string {
		for _, m := range c.VolumeMounts {
			if strings.HasPrefix(cachePath, m.MountPath+"/") {
				return m.Name
			}
		}
		return ""
	}
	if v := shared(ic); v == "" || v != shared(es.Containers[0]) || !isEmptyDir(es.Volumes, v) {
		t.Errorf("engine: the cache is not on an emptyDir both containers mount (%q, %q)", shared(ic), shared(es.Containers[0]))
	}

	// Tune and engine run on the same GPU model, by the GPU Feature
	// Discovery label.
	const label = "nvidia.com/gpu.product"
	if tp, ep := ts.Template.Spec.NodeSelector[label], es.NodeSelector[label]; tp == "" || tp != ep {
		t.Errorf("node selectors on %s: tune %q, engine %q", label, tp, ep)
	}

	var rb appsv1.Deployment
	read(t, "rollback-patch.yaml", &rb)
	if rb.Name != eng.Name || env(rb.Spec.Template.Spec.Containers[0])["GEMV_FORCE_VARIANT"] != "v1" ||
		rb.Spec.Template.Spec.Containers[0].Name != es.Containers[0].Name {
		t.Errorf("rollback patch does not set GEMV_FORCE_VARIANT=v1 on %s's engine container", eng.Name)
	}
}

// TestDocsNameTheManifests: docs/fleet.md promises these names, and the
// manifests carry them.
func TestDocsNameTheManifests(t *testing.T) {
	doc, err := os.ReadFile("../../docs/fleet.md")
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	yamls, _ := filepath.Glob("*.yaml")
	for _, f := range yamls {
		b, _ := os.ReadFile(f)
		all.Write(b)
	}
	for _, name := range []string{"nvidia.com/gpu.product", "JOB_COMPLETION_INDEX", "GEMV_TUNE_CACHE", "GEMV_FORCE_VARIANT", "emptyDir",
		"completionMode: Indexed", "DOCKER_CONFIG", "--shard", "autotune push", "autotune pull"} {
		if !strings.Contains(string(doc), name) {
			t.Errorf("docs/fleet.md does not mention %s", name)
		}
		if !strings.Contains(all.String(), name) {
			t.Errorf("no manifest carries %s", name)
		}
	}
}

func isEmptyDir(vs []corev1.Volume, name string) bool {
	for _, v := range vs {
		if v.Name == name {
			return v.EmptyDir != nil
		}
	}
	return false
}

// The strict decoding the test relies on refuses a misspelled field.
func TestStrictDecodingRefusesUnknownFields(t *testing.T) {
	var j batchv1.Job
	if err := yaml.UnmarshalStrict([]byte("apiVersion: batch/v1\nkind: Job\nspec:\n  completionMod: Indexed\n"), &j); err == nil {
		t.Error("a misspelled field decoded without an error")
	}
}
