package index

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// corpus loads every manifest of the shared corpus as tools.
func corpus(t testing.TB) []model.Tool {
	t.Helper()
	dir := testenv.Corpus(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("listing the corpus in %s: %v (found %d files)", dir, err, len(files))
	}
	var tools []model.Tool
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Tools []model.UpstreamTool `json:"tools"`
		}
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("reading %s: %v", f, err)
		}
		tools = append(tools, model.NewTools(strings.TrimSuffix(filepath.Base(f), ".json"), m.Tools)...)
	}
	return tools
}
