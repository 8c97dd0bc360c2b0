package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A direct call whose result the hub kept as a handle (the tool's result
// too large for a run, or the run's for its envelope) is an error saying
// so, never a success whose text is the handle: direct mode has no
// hub.read, so the rest would be lost unseen. A tool's own result that
// merely has a "handle" field is a result.
func TestDirectResultOfAHandle(t *testing.T) {
	handle := `{"handle":"handle-r0123456789abcdef0123-1","size":200530,"type":"json","preview":"[{\"row\":1}"}`
	for _, tc := range []struct {
		name, result string
		isError      bool
		want         string
	}{
		{"the tool's result as a handle", `{"value":` + handle + `}`, true, "the result is 200530 bytes"},
		{"the run's result as a handle", handle, true, "the result is 200530 bytes"},
		{"a result with a handle field", `{"value":{"handle":"abc","size":3}}`, false, `"handle":"abc"`},
	} {
		res := directResult("scr.big", &hub.Envelope{Status: "completed", Result: json.RawMessage(tc.result)}, false)
		text := ""
		if len(res.Content) > 0 {
			text = res.Content[0].(*mcp.TextContent).Text
		}
		if res.IsError != tc.isError || !strings.Contains(text, tc.want) {
			t.Errorf("%s: isError %v, %q; want isError %v with %q", tc.name, res.IsError, text, tc.isError, tc.want)
		}
	}
}

// The approve command the model passes on names a hub that is not at the
// default place, so the person's terminal reaches it; at the default place
// it is the plain command.
func TestApproveCommandNamesTheHub(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CAPABILITIES_HOME", home+"/demo hub")
	if got, want := approveCommand("r1"), "CAPABILITIES_HOME='"+home+"/demo hub' capabilities hub approve r1"; got != want {
		t.Errorf("approveCommand = %q, want %q", got, want)
	}
	t.Setenv("CAPABILITIES_HOME", home+"/.capabilities")
	if got := approveCommand("r1"); got != "capabilities hub approve r1" {
		t.Errorf("approveCommand at the default place = %q", got)
	}
}

// The one-line summary counts calls in English: "1 call", "3 calls".
func TestSummaryCountsCalls(t *testing.T) {
	for n, want := range map[int]string{0: "completed (0 calls): 1", 1: "completed (1 call): 1", 3: "completed (3 calls): 1"} {
		env := &hub.Envelope{Status: "completed", Result: json.RawMessage("1"), Calls: make([]run.CallInfo, n)}
		if got := summary(env); got != want {
			t.Errorf("%d calls: %q, want %q", n, got, want)
		}
	}
	// The calls the envelope's list leaves out count too.
	env := &hub.Envelope{Status: "completed", Result: json.RawMessage("1"), Calls: make([]run.CallInfo, run.MaxListedCalls), Truncated: &model.Truncated{Calls: 400}}
	if got, want := summary(env), "completed (500 calls): 1"; got != want {
		t.Errorf("500 calls, 100 listed: %q, want %q", got, want)
	}
}

// A direct-mode client is not told to use hub.describe, which it does not
// have: refused arguments point at the tool's input schema.
func TestDirectResultRefusedArguments(t *testing.T) {
	env := &hub.Envelope{Status: "failed", Error: &model.RunError{Code: "invalid_arguments", Message: "invalid arguments for mem.openNodes: field names: want an array, got an integer", Hint: `hub.describe("mem.openNodes") shows the exact input type`}}
	res := directResult("mem.openNodes", env, false)
	text := res.Content[0].(*mcp.TextContent).Text
	if !res.IsError || strings.Contains(text, "hub.describe(") || !strings.Contains(text, "the input schema of mem__openNodes in tools/list") {
		t.Errorf("refused arguments in direct mode: %q", text)
	}
}
