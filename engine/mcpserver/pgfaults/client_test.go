//go:build linux

package pgfaults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// envelope is what execute returns in its structured content.
type envelope struct {
	RunID   string          `json:"runId"`
	Status  string          `json:"status"`
	Result  json.RawMessage `json:"result"`
	Error   *model.RunError `json:"error"`
	Pending []struct {
		ID   string `json:"id"`
		Kind string `json:"kind"`
	} `json:"pending"`
}

// inFlight reports whether the run waits only on calls that were in flight
// when a process stopped (the hub's answer when an intent has no outcome).
func (e *envelope) inFlight() bool {
	if e.Status != string(model.RunAwaitingApproval) || len(e.Pending) == 0 {
		return false
	}
	for _, p := range e.Pending {
		if p.Kind != model.PendingInFlight {
			return false
		}
	}
	return true
}

// result is the run's result as a string ("" when it is not one).
func (e *envelope) result() string {
	var s string
	_ = json.Unmarshal(e.Result, &s)
	return s
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// agent is one go-sdk MCP client of the cluster: a session on one process
// at a time, moved to the next process when its process stops answering.
type agent struct {
	c    *cluster
	name string
	p    int // the process it talks to
	gen  int // that process's generation when the session was opened
	cs   *mcp.ClientSession
	hc   *http.Transport
}

func newAgent(c *cluster, name string, p int) *agent {
	return &agent{c: c, name: name, p: p % len(c.ports), hc: &http.Transport{MaxIdleConnsPerHost: 4}}
}

// errNoProcess: no process accepted a session within the time allowed.
var errNoProcess = errors.New("no hub process accepted a session")

// connect opens a session on the first process, from a.p on, that is up
// and accepts one.
func (a *agent) connect(ctx context.Context) error {
	n := len(a.c.ports)
	deadline := time.Now().Add(testenv.Timeout(30 * time.Second))
	for try := 0; ; try++ {
		i := (a.p + try) % n
		if ok, gen, tok := a.c.up(i); ok {
			cctx, cancel := context.WithTimeout(ctx, testenv.Timeout(10*time.Second))
			cs, err := mcp.NewClient(&mcp.Implementation{Name: a.name, Version: "1"}, nil).Connect(cctx,
				&mcp.StreamableClientTransport{Endpoint: a.c.url(i), HTTPClient: &http.Client{Transport: bearer{tok, a.hc}}, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
			cancel()
			if err == nil {
				a.p, a.gen, a.cs = i, gen, cs
				return nil
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return errNoProcess
		}
		if try%n == n-1 {
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// drop forgets the session (its process is gone) and moves on to the next
// process.
func (a *agent) drop() {
	if a.cs != nil {
		_ = a.cs.Close()
		a.cs = nil
	}
	a.p = (a.p + 1) % len(a.c.ports)
	a.hc.CloseIdleConnections()
}

// callOutcome is what one execute came to.
type callOutcome struct {
	env     *envelope
	toolErr string // the tool's error text (IsError without an envelope)
	err     error  // the transport's: the process did not answer
	p, gen  int    // the process it went to
}

// execute calls the execute tool with args on the agent's process.
func (a *agent) execute(ctx context.Context, args map[string]any) callOutcome {
	if a.cs == nil {
		if err := a.connect(ctx); err != nil {
			return callOutcome{err: err, p: -1}
		}
	}
	out := callOutcome{p: a.p, gen: a.gen}
	cctx, cancel := context.WithTimeout(ctx, testenv.Timeout(60*time.Second))
	defer cancel()
	res, err := a.cs.CallTool(cctx, &mcp.CallToolParams{Name: "execute", Arguments: args})
	if err != nil {
		out.err = err
		a.drop()
		return out
	}
	if res.StructuredContent == nil {
		text := ""
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text += tc.Text
			}
		}
		if text == "" {
			text = "(no text)"
		}
		out.toolErr = text
		return out
	}
	b, err := json.Marshal(res.StructuredContent)
	if err == nil {
		out.env = &envelope{}
		err = json.Unmarshal(b, out.env)
	}
	if err != nil {
		out.toolErr = fmt.Sprintf("an envelope that does not parse: %v: %s", err, b)
		out.env = nil
	}
	return out
}

func (a *agent) close() {
	if a.cs != nil {
		_ = a.cs.Close()
		a.cs = nil
	}
	a.hc.CloseIdleConnections()
}
