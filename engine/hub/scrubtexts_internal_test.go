package hub

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/scrub"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestScrubTextsAgreesWithTheJSONPath: a result of texts and structured
// content scrubbed field by field (scrubTexts) holds no secret, and reads
// the same as one scrubbed through its whole JSON; other results are left
// to the JSON path, which scrubs them too.
func TestScrubTextsAgreesWithTheJSONPath(t *testing.T) {
	const secret = "sk-live-4f9a8b7c6d5e4f3a2b1c"
	sc := scrub.New(secret)
	viaJSON := func(res *mcp.CallToolResult) *mcp.CallToolResult {
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		out := &mcp.CallToolResult{}
		if err := json.Unmarshal(sc.JSON(b), out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		res  *mcp.CallToolResult
		fast bool
	}{
		{"texts", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a " + secret + " b"}, &mcp.TextContent{Text: `{"k":"` + secret + `<&>"}`}}}, true},
		{"an error", &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "bad token " + secret}}}, true},
		{"structured", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}, StructuredContent: map[string]any{"token": secret, "n": 1.0}}, true},
		{"nothing to hide", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "plain"}}}, true},
		{"an image", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: secret}, &mcp.ImageContent{Data: []byte(secret), MIMEType: "image/png"}}}, false},
		{"annotations", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: secret, Annotations: &mcp.Annotations{Priority: 1}}}}, false},
		{"metadata", &mcp.CallToolResult{Meta: mcp.Meta{"k": secret}, Content: []mcp.Content{&mcp.TextContent{Text: secret}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orig, _ := json.Marshal(tc.res)
			got, ok := scrubTexts(sc, tc.res)
			if ok != tc.fast {
				t.Fatalf("scrubTexts took it: %v, want %v", ok, tc.fast)
			}
			if after, _ := json.Marshal(tc.res); string(after) != string(orig) {
				t.Errorf("the upstream's result was changed in place: %s", after)
			}
			whole := scrubResult(sc, tc.res)
			b, _ := json.Marshal(whole)
			if strings.Contains(string(b), secret) || strings.Contains(string(b), "4f9a8b7c6d5e") {
				t.Errorf("scrubbed result holds the secret: %s", b)
			}
			if !ok {
				return
			}
			fast, _ := json.Marshal(got)
			slow, _ := json.Marshal(viaJSON(tc.res))
			if string(fast) != string(slow) {
				t.Errorf("field by field:\n%s\nthrough JSON:\n%s", fast, slow)
			}
		})
	}
}
