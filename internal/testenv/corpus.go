package testenv

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/model"
)

// CorpusManifests loads every manifest of the corpus as the hub would store
// it: namespace → manifest with addresses and contracts.
func CorpusManifests(t testing.TB) []model.Manifest {
	t.Helper()
	dir := Corpus(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s: %v", dir, err)
	}
	sort.Strings(files)
	var out []model.Manifest
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var raw struct {
			Tools []model.UpstreamTool `json:"tools"`
		}
		if err := json.Unmarshal(data, &raw); err != nil {
			t.Fatalf("decoding %s: %v", f, err)
		}
		ns := strings.TrimSuffix(filepath.Base(f), ".json")
		out = append(out, model.Manifest{Namespace: ns, Tools: model.NewTools(ns, raw.Tools)})
	}
	return out
}

// CorpusTools is every tool of every corpus manifest, in manifest order.
func CorpusTools(t testing.TB) []model.Tool {
	t.Helper()
	var tools []model.Tool
	for _, m := range CorpusManifests(t) {
		tools = append(tools, m.Tools...)
	}
	return tools
}
