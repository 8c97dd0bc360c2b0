package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The hub answers the commonest HTTP request itself: a stateless
// (2026-07-28) tools/call of search, describe or execute. go-sdk serves
// each such request by connecting a session for it and decoding its body
// about ten times (reading it to connect, reading it again to serve, the
// params for _meta, for the Mcp-Name check, for the call; a 32 KB buffer
// each, and the tool's input schema marshalled and decoded for header
// annotations): in a profile of 32 clients, twice the CPU of the hub's own
// Execute for a trivial run, and over 90 % of the 480 KiB it allocated
// (BenchmarkHTTPRequest). fastCall decodes the body once, calls the
// same tool handler go-sdk would, and writes the reply go-sdk would write,
// byte for byte (TestFastCallAnswersAsGoSDK).
//
// It takes only requests whose answer cannot differ; anything else falls
// through to go-sdk with the body as it came, so go-sdk's own checks and
// errors stay the only ones. It declines a request
//   - not exactly protocol 2026-07-28, not tools/call of the three tools of
//     a code-mode server, or whose Mcp-Method or Mcp-Name header disagrees;
//   - whose client declares elicitation (execute may then answer with input
//     requests, which go-sdk shapes), or that carries input responses, a
//     request state, a progress token, a log level or any _meta, params or
//     message member beyond the ones named here;
//   - with an id that go-sdk would not echo as written (a string with an
//     escape or an HTML character, a number that is not an integer of at
//     most 15 digits).
//
// A server whose Options.Unavailable returns an error answers with it, as
// its middleware in go-sdk does (gate).

// fastVersion is the protocol version fastCall answers.
const fastVersion = modernProtocol

// fastRequest is the one message of a POST fastCall takes. Unknown members
// make it decline (strict decoding).
type fastRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  struct {
		Meta      json.RawMessage `json:"_meta"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"params"`
}

type fastMeta struct {
	ProtocolVersion    string          `json:"io.modelcontextprotocol/protocolVersion"`
	ClientCapabilities json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
	ClientInfo         json.RawMessage `json:"io.modelcontextprotocol/clientInfo"`
}

// fastCapabilities is go-sdk's reading of clientCapabilities under
// 2026-07-28 (roots moved to the top level; its one member, as go-sdk's
// deprecated RootCapabilities has it).
type fastCapabilities struct {
	mcp.ClientCapabilities
	Roots *struct {
		ListChanged bool `json:"listChanged,omitempty"`
	} `json:"roots,omitempty"`
}

// fastCall answers r itself and reports true, or reports false having
// changed nothing but r.Body (which then gives the same bytes again).
func (s *Server) fastCall(w http.ResponseWriter, r *http.Request) bool {
	if s.calls == nil || r.Method != http.MethodPost ||
		r.Header.Get("Mcp-Protocol-Version") != fastVersion || r.Header.Get("Mcp-Method") != "tools/call" ||
		s.calls[r.Header.Get("Mcp-Name")] == nil || len(r.Header.Values("Last-Event-ID")) > 0 ||
		!plainJSON(r.Header.Get("Content-Type")) || !acceptsBoth(r.Header.Values("Accept")) {
		return false
	}
	body, err := io.ReadAll(r.Body)
	// Whatever happens next, go-sdk may read the body again as it came
	// (and a read error again after it).
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	if err != nil {
		return false
	}
	req, ok := parseFastCall(body, r.Header.Get("Mcp-Name"))
	if !ok {
		return false
	}
	// A run outlives a client that hangs up, as under go-sdk's stateless
	// handler (it does not pass a client's cancellation on).
	ctx := context.WithoutCancel(r.Context())
	var res *mcp.CallToolResult
	gone := s.unavailable()
	if gone != nil {
		// As gate answers it (from outside the layer of go-sdk that
		// marks a result complete).
		res = toolError("%s", gone.Error())
	} else {
		res, err = s.calls[req.Params.Name](ctx, req.CallToolRequest)
	}
	if err != nil || res == nil || res.InputRequests != nil || res.RequestState != "" {
		// The handlers answer with results; this is not reached. Had it
		// been, the call was made and go-sdk cannot be asked again.
		writeFastError(w, req, err)
		return true
	}
	reply, err := s.fastReply(req.ID, res, gone == nil)
	if err != nil {
		writeFastError(w, req, err)
		return true
	}
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(reply)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(reply)
	return true
}

// fastCallRequest is a parsed call with its id as the client wrote it.
type fastCallRequest = struct {
	*mcp.CallToolRequest
	ID json.RawMessage
}

// parseFastCall decodes body as a tools/call of tool that fastCall may
// answer.
func parseFastCall(body []byte, tool string) (fastCallRequest, bool) {
	var m fastRequest
	if !strictDecode(body, &m) || m.JSONRPC != "2.0" || m.Method != "tools/call" || m.Params.Name != tool || !plainID(m.ID) {
		return fastCallRequest{}, false
	}
	var meta fastMeta
	if len(m.Params.Meta) == 0 || !strictDecode(m.Params.Meta, &meta) || meta.ProtocolVersion != fastVersion {
		return fastCallRequest{}, false
	}
	var caps fastCapabilities
	if !isObject(meta.ClientCapabilities) || !strictDecode(meta.ClientCapabilities, &caps) || caps.Elicitation != nil {
		return fastCallRequest{}, false
	}
	if meta.ClientInfo != nil {
		var info mcp.Implementation
		if !isObject(meta.ClientInfo) || !strictDecode(meta.ClientInfo, &info) {
			return fastCallRequest{}, false
		}
	}
	var metaMap map[string]any
	if err := json.Unmarshal(m.Params.Meta, &metaMap); err != nil {
		return fastCallRequest{}, false
	}
	params := &mcp.CallToolParamsRaw{Meta: metaMap, Name: m.Params.Name, Arguments: m.Params.Arguments}
	return fastCallRequest{CallToolRequest: &mcp.CallToolRequest{Params: params}, ID: m.ID}, true
}

// fastReply is the JSON-RPC response go-sdk writes for res under
// 2026-07-28: the result's _meta names the server, an absent content is
// an empty list, and resultType is "complete" for a result the tool made.
func (s *Server) fastReply(id json.RawMessage, res *mcp.CallToolResult, complete bool) ([]byte, error) {
	out := *res
	meta := map[string]any{}
	for k, v := range res.Meta {
		meta[k] = v
	}
	if _, ok := meta["io.modelcontextprotocol/serverInfo"]; !ok {
		meta["io.modelcontextprotocol/serverInfo"] = s.impl
	}
	out.Meta = meta
	if out.Content == nil {
		out.Content = []mcp.Content{}
	}
	result, err := json.Marshal(&out)
	if err != nil {
		return nil, err
	}
	result, ok := bytes.CutSuffix(result, []byte("}"))
	if !ok {
		return nil, errNotObject
	}
	var b bytes.Buffer
	b.Grow(len(result) + len(id) + 64)
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.Write(id)
	b.WriteString(`,"result":`)
	b.Write(result)
	if complete {
		b.WriteString(`,"resultType":"complete"`)
	}
	b.WriteString(`}}`)
	return b.Bytes(), nil
}

var errNotObject = jsonError("the tool's result is not a JSON object")

type jsonError string

func (e jsonError) Error() string { return string(e) }

// writeFastError answers a call that was made but cannot be answered as a
// result, as go-sdk answers a handler's error: JSON-RPC internal error.
func writeFastError(w http.ResponseWriter, req fastCallRequest, err error) {
	msg := "the tool returned no result"
	if err != nil {
		msg = err.Error()
	}
	b, _ := json.Marshal(msg)
	body := `{"jsonrpc":"2.0","id":` + string(req.ID) + `,"error":{"code":-32603,"message":` + string(b) + `}}`
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, body)
}

// strictDecode decodes one JSON value into v, refusing unknown members and
// trailing data.
func strictDecode(data []byte, v any) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return false
	}
	_, err := dec.Token()
	return err == io.EOF
}

func isObject(raw json.RawMessage) bool {
	t := bytes.TrimLeft(raw, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// plainID reports whether id is one go-sdk echoes as written: a string of
// printable ASCII that JSON encoding leaves alone (no escape, no HTML
// character), or an integer of at most 15 digits with no leading zero.
func plainID(id json.RawMessage) bool {
	switch {
	case len(id) >= 2 && id[0] == '"':
		if id[len(id)-1] != '"' {
			return false
		}
		for _, c := range id[1 : len(id)-1] {
			if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
				return false
			}
		}
		return true
	case len(id) == 0:
		return false
	}
	d := id
	if d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 15 || (d[0] == '0' && len(d) > 1) {
		return false
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// plainJSON reports whether a Content-Type is application/json, perhaps
// with parameters.
func plainJSON(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/json")
}

// acceptsBoth reports whether Accept names application/json and
// text/event-stream (or wildcards that cover them), as go-sdk requires.
func acceptsBoth(values []string) bool {
	var jsonOK, streamOK bool
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			mt, _, _ := strings.Cut(part, ";")
			switch strings.ToLower(strings.TrimSpace(mt)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK && streamOK
}

// unavailable is Options.Unavailable's answer (nil when it is not set).
func (s *Server) unavailable() error {
	if s.opts.Unavailable == nil {
		return nil
	}
	return s.opts.Unavailable()
}
