package hub_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
)

// TestProposeErrorsNameWhatWasTyped: a source that fails while it is being
// added has no namespace yet; the error names it by its URL, command line
// or document, never by a placeholder namespace.
func TestProposeErrorsNameWhatWasTyped(t *testing.T) {
	st, _, err := store.Init(filepath.Join(t.TempDir(), "hub"))
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New(st, hub.Options{})
	t.Cleanup(h.Close)
	scripted := testenv.Scripted(t)
	missing := filepath.Join(t.TempDir(), "openapi.json")
	tests := []struct {
		name string
		req  hub.AddRequest
		want string
	}{
		{"a refused URL", hub.AddRequest{URL: "http://127.0.0.1:1/mcp"},
			"adding a source: connecting to http://127.0.0.1:1/mcp: "},
		{"a command that exits", hub.AddRequest{Command: scripted, Env: map[string]string{"SCRIPTED_MODE": "exit"}},
			"adding a source: connecting to " + (&model.Source{Kind: model.KindStdio, Command: scripted[0], Args: scripted[1:]}).CommandLine() + ": the server exited"},
		{"a missing document", hub.AddRequest{Document: missing},
			"adding a source: connecting to " + missing + ": "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.Propose(context.Background(), tt.req)
			if err == nil {
				t.Fatal("Propose succeeded")
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error %q, want it to start with %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "to new") || strings.Contains(err.Error(), "of new") {
				t.Errorf("error %q names a placeholder namespace", err)
			}
		})
	}
}
