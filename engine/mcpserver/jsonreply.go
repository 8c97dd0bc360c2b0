package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
)

// jsonReply answers a POST whose only message is its reply with that reply
// as application/json instead of a one-event text/event-stream. The go-sdk
// handler always opens an event stream for a POST that carries a request;
// for the usual call (no progress, no log message, no elicitation before
// the result) that stream holds exactly one event, the response, and then
// ends. A client then runs its event-stream parser for one message (the
// TypeScript SDK pipes the body through two web streams), and the server
// writes the event and the chunked end separately. Both are allowed by the
// transport (a server answers a POST with either, the client accepts both),
// so the choice is made per response, as the stream goes:
//
//   - the first event is a JSON-RPC response to the one request the POST
//     carried: it is the stream's last message (the SDK ends the stream
//     once every request of the POST is answered), and it is written at
//     once as application/json with its length;
//   - anything else first (a notification such as progress or a log line,
//     a request such as elicitation/create): the stream is passed through
//     as it was, event after event, each flushed as the SDK flushes it;
//   - a batch (a body starting with '['), a response that is not an event
//     stream (the SDK's own JSON errors, 202 for notifications), a client
//     that does not accept application/json: passed through untouched.
//
// Nothing is held back from a stream: a notification is written and
// flushed when the SDK writes it.
type jsonReply struct {
	w      http.ResponseWriter
	single atomic.Bool // the body starts with '{': one message, not a batch

	code    int  // the status written, pending until the mode is known
	decided bool // pass-through from now on (or the reply written)
	replied bool // the reply was written as application/json
}

// acceptsJSON reports whether a request accepts application/json replies.
func acceptsJSON(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			mt, _, _ := strings.Cut(part, ";")
			mt = strings.TrimSpace(mt)
			if strings.EqualFold(mt, "application/json") || mt == "*/*" || strings.EqualFold(mt, "application/*") {
				return true
			}
		}
	}
	return false
}

// sawBody is shown the first bytes read of the body: a batch (or a body
// never seen) keeps its event stream.
func (j *jsonReply) sawBody(p []byte) {
	t := bytes.TrimLeft(p, " \t\r\n")
	j.single.Store(len(t) > 0 && t[0] == '{')
}

func (j *jsonReply) Header() http.Header { return j.w.Header() }

func (j *jsonReply) WriteHeader(code int) {
	if j.decided {
		if !j.replied {
			j.w.WriteHeader(code)
		}
		return
	}
	if code != http.StatusOK || !j.eventStream() {
		j.passThrough(code)
		return
	}
	j.code = code
}

func (j *jsonReply) eventStream() bool {
	return strings.HasPrefix(j.w.Header().Get("Content-Type"), "text/event-stream")
}

// passThrough writes the pending status: from now on the writer is the
// SDK's own.
func (j *jsonReply) passThrough(code int) {
	j.decided = true
	if code != 0 {
		j.w.WriteHeader(code)
	}
}

var errReplied = errors.New("the reply was already written as application/json")

func (j *jsonReply) Write(p []byte) (int, error) {
	if j.replied {
		return 0, errReplied
	}
	if !j.decided {
		if msg, ok := j.onlyReply(p); ok {
			h := j.w.Header()
			h.Set("Content-Type", "application/json")
			h.Del("Connection")
			h.Set("Content-Length", strconv.Itoa(len(msg)))
			j.w.WriteHeader(http.StatusOK)
			j.decided, j.replied = true, true
			if _, err := j.w.Write(msg); err != nil {
				return 0, err
			}
			return len(p), nil
		}
		code := j.code
		if code == 0 && j.eventStream() {
			code = http.StatusOK
		}
		j.passThrough(code)
	}
	return j.w.Write(p)
}

// onlyReply reports whether p, the first write of a 200 event stream, is one
// whole "message" event whose data is a JSON-RPC response, and returns that
// data.
func (j *jsonReply) onlyReply(p []byte) ([]byte, bool) {
	if !j.single.Load() || !j.eventStream() || (j.code != 0 && j.code != http.StatusOK) {
		return nil, false
	}
	ev, ok := bytes.CutSuffix(p, []byte("\n\n"))
	if !ok {
		return nil, false
	}
	var data []byte
	for line := range bytes.SplitSeq(ev, []byte("\n")) {
		switch {
		case bytes.Equal(line, []byte("event: message")):
		case bytes.HasPrefix(line, []byte("data: ")) && data == nil:
			data = line[len("data: "):]
		default:
			// An event id (resumable streams), a second data line, a
			// comment: keep the stream as it is.
			return nil, false
		}
	}
	if data == nil || !isRPCResponse(data) {
		return nil, false
	}
	return data, true
}

// isRPCResponse reports whether msg is a JSON-RPC response: an object with a
// result or an error and no method. Its top-level members are read in
// order until one of them decides (the SDK writes jsonrpc and id first).
func isRPCResponse(msg []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(msg))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return false
		}
		switch t {
		case "method":
			return false
		case "result", "error":
			return true
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return false
		}
	}
	return false
}

// Flush flushes a stream passed through; the reply was flushed with its
// write; before either, there is nothing to flush.
func (j *jsonReply) Flush() {
	if j.decided {
		_ = http.NewResponseController(j.w).Flush()
	}
}

// Unwrap gives http.ResponseController the connection's writer for what
// jsonReply does not do itself (deadlines).
func (j *jsonReply) Unwrap() http.ResponseWriter { return j.w }

// finish writes what is pending once the handler returns: a 200 event
// stream that wrote nothing (its request was cancelled) still ends as one.
func (j *jsonReply) finish() {
	if !j.decided && j.code != 0 {
		j.passThrough(j.code)
	}
}
