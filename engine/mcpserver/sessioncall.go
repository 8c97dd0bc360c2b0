package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The hub answers the commonest request of a session client itself: a
// tools/call of search, describe or execute on an HTTP session (protocol
// 2025-03-26 to 2025-11-25, the TypeScript SDKs' and most agents'). go-sdk
// serves it by decoding the body twice (a batch first, each decode with a
// 32 KB buffer), handing the message to the session's reader goroutine,
// which hands it to a handler goroutine, whose reply goes back through the
// session's stream to the POST's goroutine: three goroutine hand-offs, each
// a thread woken on an idle machine, and about 220 KiB allocated
// (BenchmarkHTTPRequest "session/"). sessionCalls reads the body once,
// calls the tool handler go-sdk would call on the POST's own goroutine, and
// writes the reply go-sdk (with jsonReply) writes, byte for byte
// (TestSessionCallAnswersAsGoSDK).
//
// It takes a call only when go-sdk's answer is known; anything else goes to
// go-sdk with its body as it came, so go-sdk's own checks and errors stay
// the only ones. It declines
//   - a session it did not see go-sdk open (it learns each from the reply
//     to the initialize that opened it), one that is closed, or one opened
//     with another user's token (go-sdk answers 403: session hijacking);
//   - a session go-sdk has not served a POST of in the last SessionIdle/2:
//     go-sdk's idle timer restarts only at the end of a POST it serves, so
//     a session used only through here would be closed as idle;
//   - another protocol version header (or none), Last-Event-ID, a
//     Content-Type or Accept go-sdk refuses;
//   - execute, for a session whose client declared elicitation, when the
//     server can ask through the client (Options.Signer): the run may end
//     asking the person, which go-sdk turns into elicitation/create on the
//     POST's stream;
//   - anything beyond jsonrpc "2.0", an id go-sdk echoes as written
//     (plainID), method "tools/call", and params with the tool's name,
//     arguments (an object) and a _meta without a progress token or
//     protocol keys; a member twice or named with an escape; text that is
//     not UTF-8;
//   - an id already in flight here (go-sdk would refuse it as a duplicate;
//     it knows only of the calls it holds, so it takes the second).
//
// What go-sdk did beside the call is kept: the client can cancel a call
// (notifications/cancelled, which go-sdk still answers), a session that
// closes cancels its calls, the handler sees the session (client
// capabilities) and the request's headers and token. Each session it knows
// costs a goroutine waiting for the session's end (a few KB, beside the
// 17 KB go-sdk keeps for it).
type sessionCalls struct {
	s    *Server
	next http.Handler

	mu       sync.Mutex
	sessions map[string]*callSession
}

// callSession is what sessionCalls knows of one go-sdk session.
type callSession struct {
	ss     *mcp.ServerSession
	user   string    // the user whose token opened it (go-sdk's check against hijacking)
	served time.Time // when go-sdk last finished serving one of its POSTs
	closed bool
	calls  map[string]context.CancelFunc // the calls under way here, by id
}

// sessionCallsTaken counts the calls sessionCalls answered (tests read
// it).
var sessionCallsTaken atomic.Int64

// sessionVersions are the protocol versions of a session whose tools/call
// reply sessionCalls writes (go-sdk's stateful versions with no standard
// headers and no result type).
var sessionVersions = map[string]bool{"2025-03-26": true, "2025-06-18": true, "2025-11-25": true}

// sessionFast wraps go-sdk's stateful handler with sessionCalls.
func (s *Server) sessionFast(next http.Handler) http.Handler {
	return &sessionCalls{s: s, next: next, sessions: map[string]*callSession{}}
}

func (sc *sessionCalls) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		sc.next.ServeHTTP(w, r)
		return
	}
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		// It may open a session (initialize): go-sdk names it in the
		// reply, and keeps the user of this request's token as its owner.
		sc.next.ServeHTTP(w, r)
		if id := w.Header().Get("Mcp-Session-Id"); id != "" {
			sc.learn(id, userOf(r))
		}
		return
	}
	sc.mu.Lock()
	cs := sc.sessions[sid]
	// go-sdk's lookup: the session is open, and a session opened with a
	// user's token is used only with that user's (403 otherwise).
	owner := cs != nil && !cs.closed && (cs.user == "" || cs.user == userOf(r))
	busy := owner && len(cs.calls) > 0
	sc.mu.Unlock()
	// The checks go-sdk makes before it looks the session up; past them
	// and the lookup, its POST restarts the session's idle timer.
	accepted := owner && sc.accepted(r)
	if eligible := accepted && sc.s.calls != nil && sessionVersions[r.Header.Get("Mcp-Protocol-Version")]; eligible || busy {
		body, err := readBack(r)
		if err == nil && eligible && sc.serve(w, r, cs, body) {
			return
		}
		if err == nil && busy {
			// A cancellation of a call under way here (go-sdk answers it
			// all the same).
			if id, ok := cancelledID(body); ok {
				sc.mu.Lock()
				if cancel := cs.calls[id]; cancel != nil {
					cancel()
				}
				sc.mu.Unlock()
			}
		}
	}
	sc.next.ServeHTTP(w, r)
	if accepted {
		now := time.Now()
		sc.mu.Lock()
		cs.served = now
		sc.mu.Unlock()
	}
}

// learn notes a session go-sdk opened for user.
func (sc *sessionCalls) learn(sid, user string) {
	var ss *mcp.ServerSession
	for x := range sc.s.mcp.Sessions() {
		if x.ID() == sid {
			ss = x
			break
		}
	}
	if ss == nil {
		return
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.sessions[sid] != nil {
		return
	}
	cs := &callSession{ss: ss, user: user, served: time.Now(), calls: map[string]context.CancelFunc{}}
	sc.sessions[sid] = cs
	go func() {
		_ = ss.Wait()
		sc.mu.Lock()
		defer sc.mu.Unlock()
		cs.closed = true
		for _, cancel := range cs.calls {
			cancel()
		}
		delete(sc.sessions, sid)
	}()
}

func userOf(r *http.Request) string {
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		return ti.UserID
	}
	return ""
}

// accepted reports whether go-sdk passes a POST's headers on to the
// session: a protocol version it negotiates (or none), no Last-Event-ID,
// application/json, and an Accept naming both kinds of reply.
func (sc *sessionCalls) accepted(r *http.Request) bool {
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && !sessionVersions[v] {
		return false
	}
	if len(r.Header.Values("Last-Event-ID")) > 0 || !acceptsBoth(r.Header.Values("Accept")) {
		return false
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

// serve answers the call in body, or reports false having answered
// nothing.
func (sc *sessionCalls) serve(w http.ResponseWriter, r *http.Request, cs *callSession, body []byte) bool {
	call, ok := parseSessionCall(body)
	if !ok {
		return false
	}
	handler := sc.s.calls[call.name]
	if handler == nil {
		return false
	}
	ip := cs.ss.InitializeParams()
	if ip == nil || ip.ProtocolVersion >= modernProtocol {
		return false
	}
	if call.name == "execute" && sc.s.opts.Signer != nil && ip.Capabilities != nil && ip.Capabilities.Elicitation != nil {
		return false
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	sc.mu.Lock()
	if cs.closed || time.Since(cs.served) >= SessionIdle/2 || cs.calls[call.key] != nil {
		sc.mu.Unlock()
		return false
	}
	cs.calls[call.key] = cancel
	sc.mu.Unlock()
	defer func() {
		sc.mu.Lock()
		delete(cs.calls, call.key)
		sc.mu.Unlock()
	}()

	req := &mcp.CallToolRequest{
		Session: cs.ss,
		Params:  &mcp.CallToolParamsRaw{Meta: call.meta, Name: call.name, Arguments: call.args},
		Extra:   &mcp.RequestExtra{TokenInfo: auth.TokenInfoFromContext(r.Context()), Header: r.Header},
	}
	fc := fastCallRequest{CallToolRequest: req, ID: call.id}
	sessionCallsTaken.Add(1)
	var res *mcp.CallToolResult
	var err error
	if gone := sc.s.unavailable(); gone != nil {
		res = toolError("%s", gone.Error())
	} else {
		res, err = handler(ctx, req)
	}
	if err != nil || res == nil || res.InputRequests != nil || res.RequestState != "" {
		// The handlers answer with results; this is not reached.
		writeFastError(w, fc, err)
		return true
	}
	out := *res
	if out.Content == nil {
		out.Content = []mcp.Content{}
	}
	result, err := json.Marshal(&out)
	if err != nil {
		writeFastError(w, fc, err)
		return true
	}
	var b bytes.Buffer
	b.Grow(len(result) + len(call.id) + 32)
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.Write(call.id)
	b.WriteString(`,"result":`)
	b.Write(result)
	b.WriteString(`}`)
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b.Bytes())
	return true
}

// readBack reads r's body and puts the same bytes back for whoever reads
// it next (a read error, too, comes again after them).
func readBack(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(r.Body)
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	return body, err
}

// sessionCall is a parsed tools/call sessionCalls may answer.
type sessionCall struct {
	id   json.RawMessage // as the client wrote it
	key  string          // the id, for cancellation
	name string
	args json.RawMessage
	meta map[string]any
}

var toolNames = map[string]string{`"search"`: "search", `"describe"`: "describe", `"execute"`: "execute"}

// parseSessionCall reads body as one JSON-RPC tools/call of the three tools,
// each member once and in the plainest form.
func parseSessionCall(body []byte) (sessionCall, bool) {
	if !bytes.Contains(body, []byte(`"tools/call"`)) || !utf8.Valid(body) || !json.Valid(body) {
		return sessionCall{}, false
	}
	var top [4]json.RawMessage // jsonrpc, id, method, params
	if !objectMembers(body, top[:], "jsonrpc", "id", "method", "params") ||
		string(top[0]) != `"2.0"` || string(top[2]) != `"tools/call"` || !plainID(top[1]) || top[3] == nil {
		return sessionCall{}, false
	}
	var params [3]json.RawMessage // name, arguments, _meta
	if !objectMembers(top[3], params[:], "name", "arguments", "_meta") {
		return sessionCall{}, false
	}
	call := sessionCall{id: top[1], key: idKey(top[1]), name: toolNames[string(params[0])], args: params[1]}
	if call.name == "" || (call.args != nil && call.args[0] != '{') {
		return sessionCall{}, false
	}
	if raw := params[2]; raw != nil {
		if raw[0] != '{' || json.Unmarshal(raw, &call.meta) != nil {
			return sessionCall{}, false
		}
		for k := range call.meta {
			if k == "progressToken" || strings.HasPrefix(k, "io.modelcontextprotocol/") {
				return sessionCall{}, false
			}
		}
	}
	return call, true
}

// objectMembers reads data, valid JSON, as an object whose members are among
// names, each at most once and named without escapes, and sets out[i] to
// the value of names[i] (nil when absent).
func objectMembers(data []byte, out []json.RawMessage, names ...string) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return skipSpace(data, i+1) == len(data)
	}
	for i < len(data) {
		if data[i] != '"' {
			return false
		}
		end := bytes.IndexByte(data[i+1:], '"')
		if end < 0 {
			return false
		}
		key := data[i+1 : i+1+end]
		if bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		k := -1
		for j, n := range names {
			if string(key) == n {
				k = j
			}
		}
		if k < 0 || out[k] != nil {
			return false
		}
		i = skipSpace(data, i+2+end)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		i = skipSpace(data, i+1)
		v := valueEnd(data, i)
		if v <= i {
			return false
		}
		out[k] = data[i:v]
		i = skipSpace(data, v)
		if i >= len(data) {
			return false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return skipSpace(data, i+1) == len(data)
		default:
			return false
		}
	}
	return false
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns where the JSON value starting at data[i] ends (data is
// valid JSON).
func valueEnd(data []byte, i int) int {
	depth := 0
	for ; i < len(data); i++ {
		switch c := data[i]; c {
		case '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
			if depth < 0 {
				return i // the end of the enclosing object
			}
		case ',', ' ', '\t', '\n', '\r', ':':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}

// idKey names a plain id (plainID) or a requestId: "s:" and the string, or
// "n:" and the integer.
func idKey(raw json.RawMessage) string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return ""
	}
	switch v := v.(type) {
	case string:
		return "s:" + v
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return "n:" + strconv.FormatInt(n, 10)
		}
		if f, err := v.Float64(); err == nil && f == float64(int64(f)) {
			return "n:" + strconv.FormatInt(int64(f), 10)
		}
	}
	return ""
}

// cancelledID returns the request a notifications/cancelled names.
func cancelledID(body []byte) (string, bool) {
	if !bytes.Contains(body, []byte("notifications/cancelled")) {
		return "", false
	}
	var m struct {
		Method string `json:"method"`
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &m) != nil || m.Method != "notifications/cancelled" {
		return "", false
	}
	k := idKey(m.Params.RequestID)
	return k, k != ""
}
