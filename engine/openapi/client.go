package openapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxResponseBytes bounds an answer the hub reads from an API.
const MaxResponseBytes = 16 << 20

// API is a loaded document ready to call: its operations by tool name, the
// reviewed server URL and how the credential is sent.
type API struct {
	Doc  *openapi3.T
	Base *url.URL
	// Named is the server URL the document itself names ("" when it names
	// none the hub can use), whatever Base was chosen.
	Named string
	Auth  *Auth
	// OAuth2 are the document's OAuth schemes, for a sign-in (not used by
	// the hub yet: see OAuth2).
	OAuth2 []OAuth2
	Ops    []Operation
	// Skipped names the operations left out and why; Warnings what the
	// hub could not read of the ones kept.
	Skipped  []string
	Warnings []string
	byName   map[string]*Operation
	client   *http.Client
}

// Load reads, parses and resolves a document and lists its operations.
// server is the reviewed base URL ("" takes the document's own); client
// reads a document given by URL, and the documents it refers to on the same
// origin (a file document may refer to files in its folder or below: see
// RefReader).
func Load(ctx context.Context, client *http.Client, location, server string) (*API, error) {
	return loadOver(ctx, client, http.DefaultTransport, location, server)
}

// LoadOver is Load with every request (the document, the documents it
// refers to, the operations' calls) made over rt, each client still kept
// on its origin: rt is how a hosted hub's egress guard sees every
// connection.
func LoadOver(ctx context.Context, rt http.RoundTripper, location, server string) (*API, error) {
	var client *http.Client
	if strings.Contains(location, "://") {
		u, err := url.Parse(location)
		if err != nil {
			return nil, fmt.Errorf("parsing the document URL: %w", err)
		}
		client = GuardedClientOver(u, rt)
	}
	return loadOver(ctx, client, rt, location, server)
}

func loadOver(ctx context.Context, client *http.Client, rt http.RoundTripper, location, server string) (*API, error) {
	data, err := Read(ctx, client, location)
	if err != nil {
		return nil, err
	}
	refs, err := newRefReader(ctx, location, rt)
	if err != nil {
		return nil, err
	}
	a, err := newAPI(ctx, data, location, server, refs)
	if err != nil {
		return nil, err
	}
	a.client = GuardedClientOver(a.Base, rt)
	return a, nil
}

// New makes an API of a document's bytes; references to other documents
// are refused.
func New(ctx context.Context, data []byte, location, server string) (*API, error) {
	return newAPI(ctx, data, location, server, nil)
}

func newAPI(ctx context.Context, data []byte, location, server string, refs *RefReader) (*API, error) {
	doc, err := ParseWith(ctx, data, location, refs)
	if err != nil {
		return nil, err
	}
	base, err := ServerURL(doc, location, server)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", location, err)
	}
	ops, auth, skipped, err := Operations(doc)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", location, err)
	}
	a := &API{Doc: doc, Base: base, Auth: auth, OAuth2: oauth2Schemes(doc), Ops: ops, Skipped: skipped, byName: map[string]*Operation{}}
	if named, err := ServerURL(doc, location, ""); err == nil {
		a.Named = named.String()
	}
	for i := range ops {
		if w := ops[i].Warning; w != "" {
			a.Warnings = append(a.Warnings, ops[i].Name+": "+w)
		}
		if _, dup := a.byName[ops[i].Name]; dup {
			return nil, fmt.Errorf("reading %s: two operations have the operationId %q", location, ops[i].Name)
		}
		a.byName[ops[i].Name] = &a.Ops[i]
	}
	a.client = GuardedClient(base)
	return a, nil
}

// Title and Version are the document's info.
func (a *API) Title() string {
	if a.Doc.Info == nil {
		return ""
	}
	return a.Doc.Info.Title
}

// Version is the document's info.version.
func (a *API) Version() string {
	if a.Doc.Info == nil {
		return ""
	}
	return a.Doc.Info.Version
}

// Description is the document's info.description.
func (a *API) Description() string {
	if a.Doc.Info == nil {
		return ""
	}
	return a.Doc.Info.Description
}

// GuardedClient is an HTTP client that reaches only base's origin: a request
// or a redirect elsewhere is refused before anything is sent there.
func GuardedClient(base *url.URL) *http.Client {
	return GuardedClientOver(base, http.DefaultTransport)
}

// GuardedClientOver is GuardedClient making its requests over rt.
func GuardedClientOver(base *url.URL, rt http.RoundTripper) *http.Client {
	want := origin(base)
	return &http.Client{
		Transport: &guard{origin: want, base: rt},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if o := origin(req.URL); o != want {
				return fmt.Errorf("the server redirected to %s, outside %s, the origin the source was reviewed for: refused", o, want)
			}
			if len(via) >= 5 {
				return errors.New("more than 5 redirects")
			}
			return nil
		},
	}
}

type guard struct {
	origin string
	base   http.RoundTripper
}

func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	if o := origin(req.URL); o != g.origin {
		return nil, fmt.Errorf("refusing a request to %s: the source may reach only %s", o, g.origin)
	}
	return g.base.RoundTrip(req)
}

// Call sends one operation's request and turns the answer into a tool
// result: JSON as structured content (an object) or JSON text, anything
// else as text; an HTTP error status as an error result with the status
// and a hint. credential is the connection's secret ("" for none).
func (a *API) Call(ctx context.Context, name string, args json.RawMessage, credential string) (*mcp.CallToolResult, error) {
	op := a.byName[name]
	if op == nil {
		return nil, fmt.Errorf("the document has no operation %q (refresh the source)", name)
	}
	var m map[string]any
	if len(args) > 0 {
		if err := json.Unmarshal(args, &m); err != nil {
			return nil, fmt.Errorf("reading the arguments: %w", err)
		}
	}
	auth := a.Auth
	if auth == nil && credential != "" {
		// A document that declares no scheme (GitHub's): a stored
		// credential goes as a bearer token on every operation.
		auth = &Auth{Scheme: "bearer"}
		cp := *op
		cp.Secured = true
		op = &cp
	}
	req, err := Build(ctx, a.Base, op, m, auth, credential)
	if err != nil {
		return errorResult(fmt.Sprintf("the request for %s was not sent: %v", name, err)), nil
	}
	if err := checkRequest(ctx, req); err != nil {
		return nil, err
	}
	start := time.Now()
	resp, err := a.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("%s %s: %w", op.Method, op.Path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading the answer after %v: %w", op.Method, op.Path, time.Since(start).Round(time.Millisecond), err)
	}
	if len(body) > MaxResponseBytes {
		return errorResult(fmt.Sprintf("%s %s answered more than %d MB, the most the hub reads; ask for less (a page, a filter)", op.Method, op.Path, MaxResponseBytes>>20)), nil
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode >= 300 {
		msg, hint := statusText(resp, body, ct)
		res := errorResult(msg)
		res.Meta = mcp.Meta{MetaHTTP: map[string]any{"status": resp.StatusCode, "hint": hint}}
		return res, nil
	}
	if len(body) == 0 {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: ""}}, StructuredContent: map[string]any{"status": resp.StatusCode}}, nil
	}
	if isJSONType(ct) || (ct == "" && json.Valid(body)) {
		var v any
		if err := json.Unmarshal(body, &v); err == nil {
			res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(body)}}}
			if obj, ok := v.(map[string]any); ok {
				res.StructuredContent = obj
			}
			return res, nil
		}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(body)}}}, nil
}

// checkKey is the context key of the check WithCheck sets.
type checkKey struct{}

// WithCheck returns ctx with a check of the requests Call sends in it:
// check reads the request's URL, each header line and its body, as
// built, and a request it returns an error for is not sent (Call returns
// that error). The hub uses it to keep credentials on their origin.
func WithCheck(ctx context.Context, check func(parts ...string) error) context.Context {
	return context.WithValue(ctx, checkKey{}, check)
}

func checkRequest(ctx context.Context, req *http.Request) error {
	check, _ := ctx.Value(checkKey{}).(func(parts ...string) error)
	if check == nil {
		return nil
	}
	parts := []string{req.URL.String()}
	for k, vs := range req.Header {
		for _, v := range vs {
			parts = append(parts, k+": "+v)
		}
	}
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return fmt.Errorf("reading the request's body to check it: %w", err)
		}
		b, err := io.ReadAll(body)
		if err != nil {
			return fmt.Errorf("reading the request's body to check it: %w", err)
		}
		parts = append(parts, string(b))
	}
	return check(parts...)
}

func errorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// MetaHTTP is the _meta key of an error result carrying the HTTP status
// and a hint ({"status": 404, "hint": "…"}), for the code's ToolError.
const MetaHTTP = "capabilities.sh/http"

// statusText words an HTTP error: the status and the start of the body,
// and a hint.
func statusText(resp *http.Response, body []byte, ct string) (string, string) {
	msg := "HTTP " + resp.Status
	text := strings.TrimSpace(string(body))
	if ct == "text/html" || looksHTML(body) {
		text = "(an HTML page)"
	}
	if len(text) > 2000 {
		text = text[:2000] + "…"
	}
	if text != "" {
		msg += ": " + text
	}
	hint := ""
	switch c := resp.StatusCode; {
	case c >= 300 && c < 400:
		hint = "the server redirected the request; the hub follows redirects only within the reviewed origin"
	case c == 400 || c == 422:
		hint = "the server refused the arguments; check them against the tool's description"
	case c == 401:
		hint = "the credential is missing or was refused; store one with `capabilities hub auth <namespace>`"
	case c == 403:
		hint = "the credential is not allowed to do this"
	case c == 404:
		hint = "nothing at that path; check the path parameters"
	case c == 409:
		hint = "the request conflicts with the current state"
	case c == 429:
		hint = "rate limited"
		if ra := resp.Header.Get("Retry-After"); ra != "" {
			hint += "; retry after " + ra + " s"
		}
	case c >= 500:
		hint = "the server failed; retrying later may help"
	}
	return msg, hint
}
