package typegen

import (
	"testing"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// corpus loads every manifest of the shared corpus as tools.
func corpus(t testing.TB) []model.Tool {
	t.Helper()
	var tools []model.Tool
	for _, m := range testenv.CorpusManifests(t) {
		tools = append(tools, m.Tools...)
	}
	return tools
}
