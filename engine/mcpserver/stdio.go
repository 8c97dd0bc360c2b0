package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sjson "github.com/segmentio/encoding/json"
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
//
// When in ends, the requests already read are answered before the session
// ends (a client that writes its requests and closes its end, as
// `printf … | capabilities hub serve --stdio` does, gets every answer).
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	w := &lineWriter{w: out}
	fl := newInflight()
	pr, pw := io.Pipe()
	go func() {
		end := filterRequests(in, pw, w, s.anticipate, fl.asked)
		if end == nil {
			return // the SDK stopped reading
		}
		fl.drain(ctx, drainLimit)
		pw.CloseWithError(end)
	}()
	return s.mcp.Run(ctx, &mcp.IOTransport{Reader: pr, Writer: nopCloser{answers{w, fl}}, MaxLineLength: maxLine + 2})
}

// drainLimit bounds how long the requests read before the client's end
// closed may take to be answered.
const drainLimit = 5 * time.Minute

// inflight counts the requests passed to the SDK and the answers it wrote.
type inflight struct {
	mu            sync.Mutex
	asks, answers int
	changed       chan struct{} // closed and replaced at each answer
}

func newInflight() *inflight { return &inflight{changed: make(chan struct{})} }

func (f *inflight) asked() {
	f.mu.Lock()
	f.asks++
	f.mu.Unlock()
}

func (f *inflight) answered() {
	f.mu.Lock()
	f.answers++
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

// drain waits until every request asked is answered, ctx ends or limit
// passes.
func (f *inflight) drain(ctx context.Context, limit time.Duration) {
	timeout := time.After(limit)
	for {
		f.mu.Lock()
		done, changed := f.answers >= f.asks, f.changed
		f.mu.Unlock()
		if done {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		case <-timeout:
			return
		}
	}
}

// answers is the SDK's writer: it counts the responses it writes (go-sdk
// writes one message per Write, "jsonrpc" then "id" then "result" or
// "error" for a response, "method" for a request of its own).
type answers struct {
	w  io.Writer
	fl *inflight
}

func (a answers) Write(p []byte) (int, error) {
	n, err := a.w.Write(p)
	if isResponse(p) {
		a.fl.answered()
	}
	return n, err
}

// isResponse reports whether msg, as go-sdk writes it, answers a request.
func isResponse(msg []byte) bool {
	head := msg[:min(len(msg), 200)]
	i := bytes.Index(head, []byte(`"id":`))
	if i < 0 {
		return false
	}
	rest := head[i:]
	r, e, m := bytes.Index(rest, []byte(`,"result":`)), bytes.Index(rest, []byte(`,"error":`)), bytes.Index(rest, []byte(`,"method":`))
	first := -1
	for _, k := range []int{r, e} {
		if k >= 0 && (first < 0 || k < first) {
			first = k
		}
	}
	return first >= 0 && (m < 0 || first < m)
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
// decodes it: an idle sandbox warms up meanwhile (hub.Anticipate). The
// code of a short message is read for it: one call needs no sandbox.
func (s *Server) anticipate(msg []byte) {
	if !bytes.Contains(msg, []byte(`"execute"`)) {
		return
	}
	var m struct {
		Params struct {
			Arguments struct {
				Code string `json:"code"`
			} `json:"arguments"`
		} `json:"params"`
	}
	if len(msg) < 4<<10 {
		_ = json.Unmarshal(msg, &m)
	}
	s.hub.Anticipate(m.Params.Arguments.Code)
}

// filterRequests copies well-formed JSON-RPC lines from in to pw and answers
// the others itself. Each line passed on is shown to arrived first, and each
// request with an id to asked. It returns the error that ended in (io.EOF at
// its end), or nil when the SDK stopped reading.
func filterRequests(in io.Reader, pw *io.PipeWriter, out io.Writer, arrived func([]byte), asked func()) error {
	br := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if t := bytes.TrimSpace(line); len(t) > 0 {
			if m, reply := inspect(t); reply != nil {
				b, _ := json.Marshal(reply)
				_, _ = out.Write(append(b, '\n'))
			} else {
				arrived(t)
				if m.method != nil && m.id != nil && string(m.id) != "null" {
					asked()
				}
				if _, werr := pw.Write(append(t, '\n')); werr != nil {
					return nil
				}
			}
		}
		if err != nil {
			return err
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
// It lets through only what go-sdk's stdio transport decodes, since a line
// the transport cannot decode ends the session; a line it passes reaches
// the SDK unchanged. The reply names the request's id when the id is one
// the SDK would have answered with, null otherwise.
func check(line []byte) *rpcError {
	_, reply := inspect(line)
	return reply
}

// inspect is check, with the line's members when it passes.
func inspect(line []byte) (m members, reply *rpcError) {
	if !sjson.Valid(line) {
		return m, errorReply(nil, -32700, "parse error: the line is not valid JSON (each message is one JSON-RPC 2.0 object per line)")
	}
	if line[0] == '[' {
		return m, errorReply(nil, -32600, "invalid request: batches (a JSON array of messages) are not supported; send each JSON-RPC message as an object on a line of its own")
	}
	if line[0] != '{' {
		return m, errorReply(nil, -32600, "invalid request: a message must be a JSON object")
	}
	m = readMembers(line)
	if m.id != nil {
		if p := idProblem(m.id); p != "" {
			return m, errorReply(nil, -32600, "invalid request: %s", p)
		}
	}
	var id json.RawMessage // the id the reply names
	if m.count["id"] == 1 {
		id = m.id
	}
	switch {
	case m.dup != "":
		return m, errorReply(id, -32600, "invalid request: %q appears more than once in the message", m.dup)
	case !isString(m.jsonrpc, "2.0"):
		return m, errorReply(id, -32600, `invalid request: "jsonrpc" must be "2.0"%s`, m.caseHint("jsonrpc"))
	case m.method != nil && m.method[0] != '"':
		return m, errorReply(id, -32600, `invalid request: "method" must be a string (got %s)`, kind(m.method))
	case m.method == nil && m.result == nil && m.error == nil:
		return m, errorReply(id, -32600, `invalid request: no "method" (nor a "result" or "error" answering the server)%s`, m.caseHint("method"))
	case m.method != nil && isString(m.method, ""):
		return m, errorReply(id, -32600, `invalid request: "method" is empty`)
	}
	if p := errorProblem(m.error); p != "" {
		// go-sdk decodes "error" even beside a "method".
		return m, errorReply(id, -32600, `invalid request: "error" must be an object with an integer "code" and a string "message" (%s)`, p)
	}
	if m.method == nil {
		// A response to a request of the server's.
		if m.result != nil && m.error != nil && string(m.error) != "null" {
			return m, errorReply(id, -32600, `invalid request: a response carries either "result" or "error", not both`)
		}
		if m.id == nil || string(m.id) == "null" {
			return m, errorReply(nil, -32600, `invalid request: a response (a message with "result" or "error" and no "method") needs the "id" of the request it answers%s`, m.caseHint("id"))
		}
	}
	if len(line) > maxLine {
		return m, errorReply(id, -32600, "invalid request: the message is %d bytes, over the limit of %d bytes", len(line), maxLine)
	}
	if m.depth > maxNesting {
		return m, errorReply(id, -32600, "invalid request: the message nests arrays and objects more than %d deep", maxNesting)
	}
	if m.method != nil && isString(m.method, "server/discover") && m.id != nil && string(m.id) != "null" && !carriesModernVersion(line) {
		// go-sdk answers a bare "method not found", which reads as if this
		// server had no 2026-07-28 at all; say what the request lacks. The
		// code stays -32601, what a client probing for the era expects.
		return m, errorReply(id, -32601, `server/discover is a request of protocol %s or later and needs that revision's envelope: params._meta with "io.modelcontextprotocol/protocolVersion": %q and "io.modelcontextprotocol/clientCapabilities": {…}. A client of an earlier revision starts with initialize instead.`, modernProtocol, modernProtocol)
	}
	return m, nil
}

const (
	// maxLine is the longest line passed on. The SDK's transport counts
	// the bytes it reads for a message, which may include the line's
	// newline and the one before it: Serve allows it maxLine+2.
	maxLine = MaxBodyBytes
	// maxNesting is how deep go-sdk decodes arrays and objects in a message.
	maxNesting = 1000
	// maxExactID bounds the integer ids go-sdk answers with the same id:
	// it reads a number id as a float64.
	maxExactID = 1<<53 - 1
)

// members are the top-level members of a JSON-RPC message that go-sdk
// reads, matched by exact name as go-sdk matches them. A member absent is
// nil; a member given twice is named in dup.
type members struct {
	jsonrpc, id, method, result, error json.RawMessage

	count  map[string]int
	folded map[string]string // a known name by the spelling found in another case
	dup    string
	depth  int // how deep the message nests arrays and objects
}

// readMembers reads the members of line, a valid JSON object, in one pass
// of segmentio's tokenizer (the line may hold 64 KB of code: encoding/json's
// token decoder took 17 µs for a short request and 0.6 ms for a long one),
// and how deep it nests arrays and objects.
func readMembers(line []byte) members {
	m := members{count: map[string]int{}}
	var (
		name  string           // the member whose value comes next
		start = -1             // where its value starts, when compound
		dst   *json.RawMessage // where its value goes
	)
	for t := sjson.NewTokenizer(line); t.Next(); {
		at := cap(line) - cap(t.Value) // t.Value is a slice of line
		switch {
		case t.Delim == '{' || t.Delim == '[':
			m.depth = max(m.depth, t.Depth+1)
			if t.Depth == 1 && start < 0 {
				start = at
			}
			continue
		case t.Depth != 1 || t.Delim == ':' || t.Delim == ',':
			continue
		case t.IsKey:
			name, dst = member(&m, t.Value)
			continue
		}
		// A member's value ends here: a scalar, or a compound's closing.
		v := t.Value
		if start >= 0 {
			v, start = line[start:at+1], -1
		}
		if dst != nil {
			*dst = json.RawMessage(v)
		}
		if name != "" {
			if m.count[name]++; m.count[name] == 2 && m.dup == "" {
				m.dup = name
			}
		}
	}
	return m
}

// member notes the key of a top-level member (a JSON string) and returns
// its name when it is one go-sdk reads, and where its value goes.
func member(m *members, key []byte) (string, *json.RawMessage) {
	var name string
	if json.Unmarshal(key, &name) != nil {
		return "", nil
	}
	switch name {
	case "jsonrpc":
		return name, &m.jsonrpc
	case "id":
		return name, &m.id
	case "method":
		return name, &m.method
	case "params":
		return name, nil
	case "result":
		return name, &m.result
	case "error":
		return name, &m.error
	}
	for _, k := range []string{"jsonrpc", "id", "method"} {
		if strings.EqualFold(name, k) {
			if m.folded == nil {
				m.folded = map[string]string{}
			}
			m.folded[k] = name
		}
	}
	return "", nil
}

// caseHint points out a member named name in another case, which go-sdk
// does not read as name.
func (m members) caseHint(name string) string {
	if f, ok := m.folded[name]; ok {
		return fmt.Sprintf(" (found %q: member names are case-sensitive)", f)
	}
	return ""
}

// idProblem says what is wrong with a message's id, or "" for a string,
// null or an integer that go-sdk answers with unchanged.
func idProblem(id json.RawMessage) string {
	switch {
	case id[0] == '"' || id[0] == 'n':
		return ""
	case id[0] == '-' || '0' <= id[0] && id[0] <= '9':
		if isInteger(id) {
			if f, err := strconv.ParseFloat(string(id), 64); err != nil || math.Abs(f) > maxExactID {
				return fmt.Sprintf(`"id" %s is beyond the integers this server answers exactly (up to %d either side of 0); use a smaller integer or a string`, short(id), maxExactID)
			}
			return ""
		}
	}
	return fmt.Sprintf(`"id" must be a string or an integer (got %s)`, kind(id))
}

// isInteger reports whether num, a JSON number, is an integer: 1, 1.0 and
// 1e2 are; 1.5 and 1e-400 are not.
func isInteger(num json.RawMessage) bool {
	s := strings.TrimPrefix(string(num), "-")
	exp := 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil {
			// An exponent beyond int: the number is 0 or out of range.
			return strings.Trim(s[:i], "0.") == "" || !strings.HasPrefix(s[i+1:], "-")
		}
		s, exp = s[:i], e
	}
	whole, frac, _ := strings.Cut(s, ".")
	// The digits after the point once the exponent is applied must be 0.
	digits := whole + frac
	point := len(whole) + exp
	return point >= len(digits) || strings.Trim(digits[max(point, 0):], "0") == ""
}

// errorProblem says what is wrong with a message's "error" member, or ""
// when it is absent, null, or an object go-sdk decodes.
func errorProblem(e json.RawMessage) string {
	if e == nil || string(e) == "null" {
		return ""
	}
	if e[0] != '{' {
		return "got " + kind(e)
	}
	var code, message int
	dec := json.NewDecoder(bytes.NewReader(e))
	_, _ = dec.Token()
	for dec.More() {
		tok, err := dec.Token()
		var v json.RawMessage
		if err != nil || dec.Decode(&v) != nil {
			return "got an object that could not be read"
		}
		switch tok {
		case "code":
			if code++; code > 1 {
				return `"code" appears more than once`
			}
			if _, err := strconv.ParseInt(string(v), 10, 64); err != nil {
				return `"code" is ` + kind(v)
			}
		case "message":
			if message++; message > 1 {
				return `"message" appears more than once`
			}
			if v[0] != '"' {
				return `"message" is ` + kind(v)
			}
		}
	}
	switch {
	case code == 0:
		return `no "code"`
	case message == 0:
		return `no "message"`
	}
	return ""
}

// kind names what a JSON value is, for an error message.
func kind(v json.RawMessage) string {
	switch v[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return short(v)
}

// short is v, or "a number" when v is too long to quote in a message.
func short(v json.RawMessage) string {
	if len(v) > 32 {
		return "a number"
	}
	return string(v)
}

// isString reports whether v is the JSON string s.
func isString(v json.RawMessage, s string) bool {
	var got string
	return len(v) > 0 && v[0] == '"' && json.Unmarshal(v, &got) == nil && got == s
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
