package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/capabilities-sh/capabilities/engine/egress"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/openapi"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectOpenAPI reads an openapi source's document (through a client that
// stays on the document's origin) and makes a session whose calls are HTTP
// requests to the source's reviewed server URL only.
func connectOpenAPI(ctx context.Context, src, orig model.Source, cred *Credential, opts Options) (*Session, error) {
	ctx, cancel := context.WithTimeout(ctx, opts.connectTimeout())
	defer cancel()
	api, err := loadAPI(ctx, &src, opts.Egress)
	if err != nil {
		return nil, err
	}
	s := &Session{src: src, orig: orig, secret: cred.key(), cred: cred, log: opts.logger(), api: api, callTimeout: opts.callTimeout(&src), egress: opts.Egress}
	if cred != nil && cred.OAuth != nil {
		s.oauth = cred.OAuth
	}
	s.apiFresh.Store(true)
	return s, nil
}

// loadAPI reads the document of src and checks that it still names the
// server it named when src was reviewed. g, when set, checks every
// connection (the document's, its references', the calls').
func loadAPI(ctx context.Context, src *model.Source, g *egress.Guard) (*openapi.API, error) {
	var api *openapi.API
	var err error
	if g != nil {
		api, err = openapi.LoadOver(ctx, g.Transport(nameOf(src)), src.Document, src.URL)
	} else {
		var client *http.Client
		client, err = documentClient(src.Document)
		if err != nil {
			return nil, fmt.Errorf("connecting to %s: %w", nameOf(src), err)
		}
		api, err = openapi.Load(ctx, client, src.Document, src.URL)
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w (a slow server gets more time with `capabilities hub add --timeout` or CAPABILITIES_CONNECT_TIMEOUT)", err)
		}
		return nil, fmt.Errorf("connecting to %s: %w", nameOf(src), err)
	}
	if !src.AddedAt.IsZero() && api.Named != src.DocumentServer { // a stored source, not a proposal
		return nil, fmt.Errorf("connecting to %s: the document now names the server %s (%s when the source was reviewed); calls go only to %s: to use the new server, remove the source and add it again, and review it", nameOf(src), orNone(api.Named), orNone(src.DocumentServer), src.URL)
	}
	return api, nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// documentClient reads a document URL without leaving its origin (nil
// client for a file).
func documentClient(location string) (*http.Client, error) {
	if !strings.Contains(location, "://") {
		return nil, nil
	}
	u, err := url.Parse(location)
	if err != nil {
		return nil, fmt.Errorf("parsing the document URL: %w", err)
	}
	return openapi.GuardedClient(u), nil
}

// OpenAPI returns the session's API, nil for an MCP source.
func (s *Session) OpenAPI() *openapi.API {
	if s.src.Kind != model.KindOpenAPI {
		return nil
	}
	s.apiMu.Lock()
	defer s.apiMu.Unlock()
	return s.api
}

// apiManifest lists the document's operations as tools. The document is
// read again, except right after the session read it: a refresh sees a
// changed document (and a server it now names is refused, the session
// marked dead so that calls read the document again too).
func (s *Session) apiManifest(ctx context.Context) (*model.Manifest, error) {
	if !s.apiFresh.Swap(false) {
		rctx, cancel := s.withDeadline(ctx)
		api, err := loadAPI(rctx, &s.src, s.egress)
		cancel()
		if err != nil {
			s.broken.Store(true)
			return nil, err
		}
		s.apiMu.Lock()
		s.api = api
		s.apiMu.Unlock()
	}
	s.apiMu.Lock()
	api := s.api
	s.apiMu.Unlock()
	up := make([]model.UpstreamTool, len(api.Ops))
	for i := range api.Ops {
		up[i] = api.Ops[i].Tool
	}
	return s.withTools(&model.Manifest{
		Namespace:     s.src.Namespace,
		ServerName:    api.Title(),
		ServerVersion: api.Version(),
		Instructions:  api.Description(),
		FetchedAt:     time.Now().UTC(),
	}, up), nil
}

func (s *Session) callAPI(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	rctx, cancel := s.withDeadline(ctx)
	defer cancel()
	s.apiFresh.Store(false) // a later listing reads the document again
	s.apiMu.Lock()
	api := s.api
	s.apiMu.Unlock()
	var res *mcp.CallToolResult
	var err error
	if s.oauth != nil {
		res, err = s.callWithToken(rctx, api, name, args)
	} else {
		res, err = api.Call(rctx, name, args, s.secret)
	}
	if err != nil {
		if ctx.Err() == nil && errors.Is(context.Cause(rctx), errDeadline) {
			return nil, &TimeoutError{Namespace: nameOf(&s.src), Method: "tools/call", Tool: name, Timeout: s.callTimeout}
		}
		return nil, fmt.Errorf("calling %s on %s: %w", name, nameOf(&s.src), err)
	}
	return res, nil
}

// callWithToken calls an operation with the OAuth access token, sent as
// Authorization: Bearer by the API's client (which reaches only the
// reviewed server's origin); a 401 answer gets the tokens refreshed and the
// call made once more.
func (s *Session) callWithToken(ctx context.Context, api *openapi.API, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	tk, err := s.oauth.Token(ctx)
	if err != nil {
		return nil, err
	}
	res, err := api.Call(ctx, name, args, tk.AccessToken)
	if err != nil || httpStatus(res) != http.StatusUnauthorized {
		return res, err
	}
	if tk, err = s.oauth.Refresh(ctx, tk.AccessToken); err != nil {
		return nil, err
	}
	return api.Call(ctx, name, args, tk.AccessToken)
}

// httpStatus is the HTTP status an openapi error result carries (0: none).
func httpStatus(res *mcp.CallToolResult) int {
	if res == nil || !res.IsError {
		return 0
	}
	m, _ := res.Meta[openapi.MetaHTTP].(map[string]any)
	switch v := m["status"].(type) {
	case int:
		return v
	case float64:
		return int(v)
	}
	return 0
}
