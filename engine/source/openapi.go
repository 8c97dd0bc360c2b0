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

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/openapi"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectOpenAPI reads an openapi source's document (through a client that
// stays on the document's origin) and makes a session whose calls are HTTP
// requests to the source's reviewed server URL only.
func connectOpenAPI(ctx context.Context, src, orig model.Source, secret string, opts Options) (*Session, error) {
	ctx, cancel := context.WithTimeout(ctx, opts.connectTimeout())
	defer cancel()
	client, err := documentClient(src.Document)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", src.Namespace, err)
	}
	api, err := openapi.Load(ctx, client, src.Document, src.URL)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w (a slow server gets more time with `capabilities hub add --timeout` or CAPABILITIES_CONNECT_TIMEOUT)", err)
		}
		return nil, fmt.Errorf("connecting to %s: %w", src.Namespace, err)
	}
	return &Session{src: src, orig: orig, secret: secret, api: api, callTimeout: opts.callTimeout(&src)}, nil
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
func (s *Session) OpenAPI() *openapi.API { return s.api }

func (s *Session) apiManifest() *model.Manifest {
	up := make([]model.UpstreamTool, len(s.api.Ops))
	for i := range s.api.Ops {
		up[i] = s.api.Ops[i].Tool
	}
	return &model.Manifest{
		Namespace:     s.src.Namespace,
		ServerName:    s.api.Title(),
		ServerVersion: s.api.Version(),
		Instructions:  s.api.Description(),
		FetchedAt:     time.Now().UTC(),
		Tools:         model.NewTools(s.src.Namespace, up),
	}
}

func (s *Session) callAPI(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	rctx, cancel := s.withDeadline(ctx)
	defer cancel()
	res, err := s.api.Call(rctx, name, args, s.secret)
	if err != nil {
		if ctx.Err() == nil && errors.Is(context.Cause(rctx), errDeadline) {
			return nil, &TimeoutError{Namespace: s.src.Namespace, Method: "tools/call", Tool: name, Timeout: s.callTimeout}
		}
		return nil, fmt.Errorf("calling %s on %s: %w", name, s.src.Namespace, err)
	}
	return res, nil
}
