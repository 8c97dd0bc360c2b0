package mcpserver

import (
	"context"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/store"
)

// TestExecuteDescriptionTellsTheModel: execute's description, as a client
// lists it, says what the model cannot learn by trying: the code reaches
// nothing but the source functions; an approval opens on the person's
// screen, and the model tells the person and then resumes; and it never asks
// the person for a password or token in the chat. (Its length is measured
// with a real tokenizer by e2e's TestFixedSurfaceTokens.)
func TestExecuteDescriptionTellsTheModel(t *testing.T) {
	h := hub.New(store.NewMem(), hub.Options{})
	defer h.Close()
	ctx := context.Background()
	cs := connectInMemory(t, New(h, Options{}))
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var desc string
	for _, tl := range list.Tools {
		if tl.Name == "execute" {
			desc = tl.Description
		}
	}
	for _, tc := range []struct{ point, want string }{
		{"no network or filesystem", "No network or filesystem: only these functions reach outside."},
		{"an approval opens on the person's screen", "awaiting_approval: a page or window opens on the person's screen"},
		{"tell the person, then resume", "tell the person, then call execute({resume: runId})"},
		{"no secrets in chat", "Never ask the person for passwords or tokens in chat."},
	} {
		if !strings.Contains(desc, tc.want) {
			t.Errorf("execute's description does not say %s (%q):\n%s", tc.point, tc.want, desc)
		}
	}
}
