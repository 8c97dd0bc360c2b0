package sandbox

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// deepHost answers gh.deep({d}) with arrays nested d levels deep, and
// gh.deepstr with a string full of brackets.
type deepHost struct{}

func (deepHost) CallTool(ctx context.Context, c Call) CallResult {
	var a struct{ D int }
	_ = json.Unmarshal(c.Args, &a)
	if c.Address == "gh.deepstr" {
		b, _ := json.Marshal(strings.Repeat("[{", a.D))
		return CallResult{Value: b}
	}
	return CallResult{Value: json.RawMessage(strings.Repeat("[", a.D) + strings.Repeat("]", a.D))}
}

// TestDeepResultIsAToolError: a result nested deeper than MaxResultDepth
// reaches the code as a ToolError it can catch; before, 4,000 levels
// ended the run as stack_overflow, which blamed the code's recursion.
func TestDeepResultIsAToolError(t *testing.T) {
	code := `const out = [];
for (const [tool, d] of [["deep", 1000], ["deep", 1001], ["deep", 4000], ["deepstr", 5000]]) {
  try { const v = await gh[tool]({d}); out.push(typeof v) } catch (e) { out.push(e.code) }
}
return out`
	out := driver(t).Run(context.Background(), Request{JS: code, Host: deepHost{}, Namespaces: map[string][]string{"gh": {"deep", "deepstr"}}, Seed: 7, Clock: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
	if out.Status != StatusCompleted {
		t.Fatalf("%+v %+v", out, out.Error)
	}
	var got []string
	if err := json.Unmarshal(out.Result, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"object", CodeResultTooDeep, CodeResultTooDeep, "string"}, got); diff != "" {
		t.Errorf("what the code got (-want +got):\n%s", diff)
	}
}
