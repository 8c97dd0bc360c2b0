package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Run serves one client over stdin/stdout until it disconnects, in either
// protocol era: go-sdk serves a request that names 2026-07-28 in its _meta
// (server/discover, tools/list, tools/call with input requests) on the same
// stdio session that serves an older client's initialize. A line that is
// not a JSON-RPC 2.0 message is answered with a parse or invalid-request
// error here, instead of reaching the SDK's transport (which would end the
// session): the server keeps serving after malformed input.
func (s *Server) Run(ctx context.Context) error {
	return s.Serve(ctx, os.Stdin, os.Stdout)
}

// Serve is Run over any pair of streams.
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	w := &lineWriter{w: out}
	pr, pw := io.Pipe()
	go filterRequests(in, pw, w, s.anticipate)
	return s.mcp.Run(ctx, &mcp.IOTransport{Reader: pr, Writer: nopCloser{w}, MaxLineLength: MaxBodyBytes})
}

// lineWriter serializes whole-message writes from the SDK and the filter.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// anticipate tells the hub when a message names execute, before the SDK
// decodes it: an idle sandbox warms up meanwhile (hub.Anticipate).
func (s *Server) anticipate(msg []byte) {
	if bytes.Contains(msg, []byte(`"execute"`)) {
		s.hub.Anticipate()
	}
}

// filterRequests copies well-formed JSON-RPC lines from in to pw and answers
// the others itself. Each line passed on is shown to arrived first.
func filterRequests(in io.Reader, pw *io.PipeWriter, out io.Writer, arrived func([]byte)) {
	br := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if t := bytes.TrimSpace(line); len(t) > 0 {
			if reply := check(t); reply != nil {
				b, _ := json.Marshal(reply)
				_, _ = out.Write(append(b, '\n'))
			} else {
				arrived(t)
				if _, werr := pw.Write(append(t, '\n')); werr != nil {
					return
				}
			}
		}
		if err != nil {
			pw.CloseWithError(err)
			return
		}
	}
}

type rpcError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func errorReply(id json.RawMessage, code int, format string, args ...any) *rpcError {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	r := &rpcError{JSONRPC: "2.0", ID: id}
	r.Error.Code, r.Error.Message = code, fmt.Sprintf(format, args...)
	return r
}

// check returns the error reply for a malformed line, or nil to pass it on.
func check(line []byte) *rpcError {
	if !json.Valid(line) {
		return errorReply(nil, -32700, "parse error: the line is not valid JSON (each message is one JSON-RPC 2.0 object per line)")
	}
	if line[0] == '[' {
		return nil // a batch: the SDK checks each message
	}
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  *string         `json:"method"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if line[0] != '{' || json.Unmarshal(line, &m) != nil {
		return errorReply(nil, -32600, "invalid request: a message must be a JSON object")
	}
	if m.JSONRPC != "2.0" {
		return errorReply(m.ID, -32600, `invalid request: "jsonrpc" must be "2.0"`)
	}
	if m.Method == nil && m.Result == nil && m.Error == nil {
		return errorReply(m.ID, -32600, `invalid request: no "method" (nor a "result" or "error" answering the server)`)
	}
	if m.Method != nil && *m.Method == "" {
		return errorReply(m.ID, -32600, `invalid request: "method" is empty`)
	}
	if m.Method != nil && *m.Method == "server/discover" && len(m.ID) > 0 && string(m.ID) != "null" && !carriesModernVersion(line) {
		// go-sdk answers a bare "method not found", which reads as if this
		// server had no 2026-07-28 at all; say what the request lacks. The
		// code stays -32601, what a client probing for the era expects.
		return errorReply(m.ID, -32601, `server/discover is a request of protocol %s or later and needs that revision's envelope: params._meta with "io.modelcontextprotocol/protocolVersion": %q and "io.modelcontextprotocol/clientCapabilities": {…}. A client of an earlier revision starts with initialize instead.`, modernProtocol, modernProtocol)
	}
	return nil
}

// carriesModernVersion reports whether a request names protocol 2026-07-28
// or later in params._meta, which is how go-sdk tells a request of that
// revision from an older session's. A line it cannot read that far is left
// to the SDK.
func carriesModernVersion(line []byte) bool {
	var m struct {
		Params struct {
			Meta struct {
				Version any `json:"io.modelcontextprotocol/protocolVersion"`
			} `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil {
		return true
	}
	v, ok := m.Params.Meta.Version.(string)
	return ok && v >= modernProtocol
}
