package mcpserver

import (
	"testing"

	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/google/go-cmp/cmp"
)

// TestAskingNamesCallsMadeTogether: the awaiting_approval line names one
// call, or the calls made together by tool, in the order they came.
func TestAskingNamesCallsMadeTogether(t *testing.T) {
	tests := []struct {
		addresses []string
		want      string
	}{
		{[]string{"github.create_issue"}, "github.create_issue needs"},
		{[]string{"github.create_issue", "github.create_issue", "github.create_issue"}, "3 calls (github.create_issue ×3) need"},
		{[]string{"up.record", "memory.createEntities", "up.record"}, "3 calls (up.record ×2, memory.createEntities) need"},
	}
	for _, tt := range tests {
		var pending []run.PendingInfo
		for _, a := range tt.addresses {
			pending = append(pending, run.PendingInfo{Address: a})
		}
		if diff := cmp.Diff(tt.want, asking(pending)); diff != "" {
			t.Errorf("%v (-want +got):\n%s", tt.addresses, diff)
		}
	}
}
