package app

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestConnectSummary: an agent whose own capabilities entry connect left as
// it is (status kept) is named as such, not as a failure.
func TestConnectSummary(t *testing.T) {
	tests := []struct {
		name, out     string
		summary, body string
	}{
		{"kept only", `{"files": [{"harness": "claude-code", "path": "/h/.claude.json", "status": "kept"}]}`,
			"The agents have their own capabilities entry",
			"Left as they are, with their own capabilities entry: Claude Code (remove it and connect again to use the hub's)."},
		{"kept and changed", `{"files": [{"harness": "claude-code", "status": "kept"}, {"harness": "codex", "status": "changed"}]}`,
			"Connected Codex CLI",
			"Restart them to reach the hub. `capabilities rollback` undoes it.\nLeft as they are, with their own capabilities entry: Claude Code (remove it and connect again to use the hub's)."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r connectResult
			if err := json.Unmarshal([]byte(tt.out), &r); err != nil {
				t.Fatal(err)
			}
			summary, body := connectSummary(r)
			if diff := cmp.Diff([2]string{tt.summary, tt.body}, [2]string{summary, body}); diff != "" {
				t.Errorf("connectSummary (-want +got):\n%s", diff)
			}
		})
	}
}
