package main

import (
	"bytes"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/loader"
	"github.com/llorch/llorch-check/server"
	"github.com/llorch/llorch-check/tokenizer"
)

// manifest is the part of a Kubernetes object these checks read.
type manifest struct {
	APIVersion string         `yaml:"apiVersion"`
	Kind       string         `yaml:"kind"`
	Metadata   map[string]any `yaml:"metadata"`
	Spec       yaml.Node      `yaml:"spec"`
	Data       map[string]string
}

func readManifests(t *testing.T) map[string]*manifest {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "deploy", "kubernetes", "*.yaml"))
	require.NoError(t, err)
	out := map[string]*manifest{}
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var m manifest
			if err := dec.Decode(&m); errors.Is(err, io.EOF) {
				break
			} else {
				require.NoError(t, err, f)
			}
			out[m.Kind] = &m
		}
	}
	return out
}

// TestDeployManifests checks deploy/kubernetes against the product: the
// API versions of each kind, the worker's arguments parse as serve's
// flags, its probes are serve's routes, the selectors agree, and the
// HPA scales on a metric serve exports.
func TestDeployManifests(t *testing.T) {
	ms := readManifests(t)
	versions := map[string]string{"Namespace": "v1", "Deployment": "apps/v1", "Service": "v1", "PodDisruptionBudget": "policy/v1",
		"HorizontalPodAutoscaler": "autoscaling/v2", "ServiceMonitor": "monitoring.coreos.com/v1", "ConfigMap": "v1"}
	for kind, v := range versions {
		require.Contains(t, ms, kind)
		require.Equal(t, v, ms[kind].APIVersion, kind)
	}

	var dep struct {
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		}
		Template struct {
			Metadata struct{ Labels map[string]string }
			Spec     struct {
				Containers []struct {
					Args  []string
					Ports []struct {
						Name          string
						ContainerPort int `yaml:"containerPort"`
					}
				}
			}
		}
	}
	require.NoError(t, ms["Deployment"].Spec.Decode(&dep))
	labels := dep.Selector.MatchLabels
	require.Equal(t, labels, dep.Template.Metadata.Labels, "the selector picks the template's pods")
	c := dep.Template.Spec.Containers[0]
	require.Equal(t, "serve", c.Args[0])
	serve := newServeCmd()
	require.NoError(t, serve.ParseFlags(c.Args[1:]), "the worker's arguments are serve flags")
	port, _ := serve.Flags().GetInt("port")
	require.Equal(t, port, c.Ports[0].ContainerPort)

	probes := readProbes(t, ms["Deployment"])
	// Serving the tiny model, as a pod the autoscaler reads does: the
	// model's metrics carry its name and appear once it is loaded.
	srv := server.New(server.Config{})
	m, err := loader.Load(fixture.TinyModel())
	require.NoError(t, err)
	tok, err := tokenizer.Load(fixture.TinyModel())
	require.NoError(t, err)
	require.NoError(t, srv.SetModel(m, tok))
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	for _, p := range probes {
		resp, err := ts.Client().Get(ts.URL + p)
		require.NoError(t, err)
		resp.Body.Close()
		require.NotEqual(t, 404, resp.StatusCode, "probe path %s is a serve route", p)
	}

	for _, kind := range []string{"Service", "PodDisruptionBudget", "ServiceMonitor"} {
		var s struct {
			Selector yaml.Node
		}
		require.NoError(t, ms[kind].Spec.Decode(&s), kind)
		// A Service selects by labels, the others by matchLabels.
		var sel struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		}
		if s.Selector.Kind == yaml.MappingNode && s.Selector.Content[0].Value != "matchLabels" {
			require.NoError(t, s.Selector.Decode(&sel.MatchLabels))
		} else {
			require.NoError(t, s.Selector.Decode(&sel))
		}
		require.Equal(t, labels, sel.MatchLabels, "%s selects the worker pods", kind)
	}

	var hpa struct {
		Metrics []struct {
			Pods struct {
				Metric struct{ Name string }
			}
		}
	}
	require.NoError(t, ms["HorizontalPodAutoscaler"].Spec.Decode(&hpa))
	metric := hpa.Metrics[0].Pods.Metric.Name
	resp, err := ts.Client().Get(ts.URL + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Regexp(t, regexp.MustCompile(`(?m)^`+metric+`\b`), string(body), "serve exports the HPA's metric")
	require.Contains(t, ms["ConfigMap"].Data["config.yaml"], metric, "the adapter rule serves it")
}

// readProbes returns the worker's probe paths.
func readProbes(t *testing.T, m *manifest) []string {
	var paths []string
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		for i := 0; i+1 < len(n.Content); i++ {
			if n.Content[i].Value == "path" && n.Kind == yaml.MappingNode {
				paths = append(paths, n.Content[i+1].Value)
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(&m.Spec)
	slices.Sort(paths)
	require.Equal(t, []string{"/healthz", "/healthz", "/readyz"}, paths)
	return slices.Compact(paths)
}
