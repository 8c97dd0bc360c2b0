package sandbox

import (
	"context"
	"encoding/json"
	"testing"
)

type echoHost struct{}

func (echoHost) CallTool(ctx context.Context, c Call) CallResult {
	return CallResult{Value: json.RawMessage(`{"echo":` + string(c.Args) + `}`)}
}

func TestSmoke(t *testing.T) {
	d, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, js := range []string{
		`return 1+1`,
		`const r = await gh.get({a:1}); console.log("hi", r); return r`,
		`return await Promise.all([gh.get({a:1}), gh.get({a:2})])`,
		`gh.nope()`,
		`await new Promise(r => setTimeout(r, 10)); return Date.now()`,
		`throw new Error("boom")`,
		`return [typeof std, typeof os, typeof eval, Math.random(), crypto.randomUUID()]`,
	} {
		out := d.Run(context.Background(), Request{JS: js, Host: echoHost{}, Namespaces: map[string][]string{"gh": {"get", "list"}}})
		t.Logf("%s => %+v %s %v", js, out, out.Result, out.Error)
	}
}
