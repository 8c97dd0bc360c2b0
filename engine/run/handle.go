package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/store"
)

// A tool result larger than Limits.HandleBytes does not enter the sandbox:
// it is scrubbed, stored as a blob (store.Blobs, "handle-<run>-<seq>"), and
// the code gets a Handle in its place, which hub.read reads in parts. The
// journal holds the Handle, so a replay gives the same one. The run's
// result, when larger than the envelope's budget, is kept the same way
// ("handle-<run>-result").

// Handle is what the code (or the envelope) gets instead of a large value.
type Handle struct {
	Handle  string `json:"handle"`
	Size    int    `json:"size"` // bytes of the content hub.read slices
	Type    string `json:"type"` // "json" (content is compact JSON) or "text" (a string's text)
	Preview string `json:"preview"`
}

// handleBlob is a handle's stored content.
type handleBlob struct {
	Run     string `json:"run"`
	Type    string `json:"type"`
	Content string `json:"content"`
}

// previewBytes is how much of the content a Handle shows.
const previewBytes = 1 << 10

const handlePrefix = "handle-"

// handleID names the blob of a run's call (seq) or of its result (seq 0).
func handleID(runID string, seq int) string {
	if seq == 0 {
		return handlePrefix + runID + "-result"
	}
	return handlePrefix + runID + "-" + strconv.Itoa(seq)
}

// maxFullArgs is the most of a pending call's arguments kept whole for a
// person to read (FullArgs); longer ones are shown shortened only.
const maxFullArgs = 1 << 20

// fullArgsID names the blob of a pending call's whole arguments: a
// handle's name, so that it goes with its run.
func fullArgsID(runID, callID string) string {
	return handlePrefix + runID + "-args-" + callID
}

// FullArgs returns the whole arguments, scrubbed, of the pending call
// callID of run runID, kept when its preview shortened them
// (model.Pending.ArgsSize); store.ErrNotFound when none were kept.
func (e *Engine) FullArgs(ctx context.Context, runID, callID string) (json.RawMessage, error) {
	id := fullArgsID(runID, callID)
	if err := store.ValidID(id); err != nil {
		return nil, fmt.Errorf("reading a pending call's arguments: %w", store.ErrNotFound)
	}
	b, err := store.Get[handleBlob](ctx, e.store, store.Blobs, id)
	if err != nil {
		return nil, fmt.Errorf("reading a pending call's arguments: %w", err)
	}
	if b.Run != runID {
		return nil, fmt.Errorf("reading a pending call's arguments: %w", store.ErrNotFound)
	}
	return json.RawMessage(b.Content), nil
}

// ErrHandleBudget is a run whose handles would take more than
// Limits.MaxHandleBytes.
var ErrHandleBudget = errors.New("the run's large results would take more than its budget")

// content is what hub.read slices: a string's text, else compact JSON.
func content(value json.RawMessage) (typ, text string) {
	var s string
	if len(value) > 0 && value[0] == '"' && json.Unmarshal(value, &s) == nil {
		return "text", s
	}
	var b bytes.Buffer
	if json.Compact(&b, value) == nil {
		return "json", b.String()
	}
	return "json", string(value)
}

// storeHandle stores value (already scrubbed) as the blob id and returns
// its Handle as JSON.
func storeHandle(ctx context.Context, st store.Store, runID, id string, value json.RawMessage) (json.RawMessage, int, error) {
	typ, text := content(value)
	return storeContent(ctx, st, runID, id, typ, text)
}

// storeContent stores a handle's content as the blob id and returns its
// Handle as JSON.
func storeContent(ctx context.Context, st store.Store, runID, id, typ, text string) (json.RawMessage, int, error) {
	if err := st.Put(ctx, store.Blobs, id, handleBlob{Run: runID, Type: typ, Content: text}); err != nil {
		return nil, 0, fmt.Errorf("storing a large result: %w", err)
	}
	h := Handle{Handle: id, Size: len(text), Type: typ, Preview: cutRunes(text, 0, previewBytes)}
	b, err := json.Marshal(h)
	return b, len(text), err
}

// isHandle reports the size of the handle value is, or -1.
func isHandle(value json.RawMessage) int {
	if !bytes.HasPrefix(value, []byte(`{"handle":"`+handlePrefix)) {
		return -1
	}
	var h Handle
	if json.Unmarshal(value, &h) != nil {
		return -1
	}
	return h.Size
}

// cutRunes is text[off:off+n] with both ends moved back to the start of
// the character they fall in, so that consecutive slices put together are
// the text, and no slice holds part of a character.
func cutRunes(text string, off, n int) string {
	start, end := min(off, len(text)), min(off+n, len(text))
	for start > 0 && start < len(text) && !utf8.RuneStart(text[start]) {
		start--
	}
	for end > start && end < len(text) && !utf8.RuneStart(text[end]) {
		end--
	}
	return text[start:end]
}

// readArgs are hub.read's arguments.
type readArgs struct {
	Handle   string   `json:"handle"`
	Offset   *float64 `json:"offset"`
	Length   *float64 `json:"length"`
	JSONPath *string  `json:"jsonPath"`
}

// readHandle answers hub.read: a slice of the content (a string), or the
// value at a JSON path. Nothing it returns is larger than max bytes.
func (e *Engine) readHandle(ctx context.Context, raw json.RawMessage, max int) (json.RawMessage, *model.ToolError) {
	var a readArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, &model.ToolError{Code: "invalid_arguments", Message: "hub.read: " + err.Error(), Hint: "hub.read(handle, {offset, length}) or hub.read(handle, {jsonPath})"}
	}
	if !strings.HasPrefix(a.Handle, handlePrefix) || store.ValidID(a.Handle) != nil {
		return nil, &model.ToolError{Code: "invalid_arguments", Message: fmt.Sprintf("hub.read: %q is not a handle; pass the object a large tool result came as, or its handle string", a.Handle)}
	}
	b, err := e.handleBlob(ctx, a.Handle)
	if errors.Is(err, store.ErrNotFound) {
		return nil, &model.ToolError{Code: "not_found", Message: fmt.Sprintf("hub.read: no handle %s (a handle lasts as long as its run)", a.Handle)}
	}
	if err != nil {
		return nil, &model.ToolError{Code: "internal", Message: "hub.read: " + err.Error()}
	}
	if a.JSONPath != nil {
		if a.Offset != nil || a.Length != nil {
			return nil, &model.ToolError{Code: "invalid_arguments", Message: "hub.read: pass either {offset, length} or {jsonPath}, not both"}
		}
		if b.Type != "json" {
			return nil, &model.ToolError{Code: "invalid_arguments", Message: "hub.read: this handle holds text, not JSON: read it with {offset, length}"}
		}
		v, err := jsonPath(b.Content, *a.JSONPath)
		if err != nil {
			return nil, &model.ToolError{Code: "invalid_arguments", Message: "hub.read: " + err.Error()}
		}
		if len(v) > max {
			return nil, &model.ToolError{Code: "result_too_large", Message: fmt.Sprintf("hub.read: the value at %s is %d bytes; the most one read returns is %d", *a.JSONPath, len(v), max), Hint: "read a deeper path, or slices with {offset, length}"}
		}
		return v, nil
	}
	off, n := 0, max
	if a.Offset != nil {
		if *a.Offset < 0 || *a.Offset != float64(int(*a.Offset)) {
			return nil, &model.ToolError{Code: "invalid_arguments", Message: "hub.read: offset must be a whole number of bytes, 0 or more"}
		}
		off = int(*a.Offset)
	}
	if a.Length != nil {
		if *a.Length < 1 || *a.Length != float64(int(*a.Length)) || int(*a.Length) > max {
			return nil, &model.ToolError{Code: "invalid_arguments", Message: fmt.Sprintf("hub.read: length must be a whole number of bytes from 1 to %d", max), Hint: "read the rest in further slices"}
		}
		n = int(*a.Length)
	}
	v, _ := json.Marshal(cutRunes(b.Content, off, n))
	return v, nil
}

// jsonPath returns the JSON of the value at path in doc. A path is $
// followed by .name, ['name'] / ["name"] and [index] steps.
func jsonPath(doc, path string) (json.RawMessage, error) {
	p := strings.TrimSpace(path)
	if !strings.HasPrefix(p, "$") {
		return nil, fmt.Errorf("jsonPath %q must start with $ (e.g. $.items[0].id)", path)
	}
	p = p[1:]
	var steps []any
	for p != "" {
		switch {
		case p[0] == '.':
			p = p[1:]
			i := strings.IndexAny(p, ".[")
			if i < 0 {
				i = len(p)
			}
			if i == 0 {
				return nil, fmt.Errorf("jsonPath %q: a name is missing after a dot", path)
			}
			steps, p = append(steps, p[:i]), p[i:]
		case p[0] == '[':
			end := strings.IndexByte(p, ']')
			if end < 0 {
				return nil, fmt.Errorf("jsonPath %q: a [ is not closed", path)
			}
			in := strings.TrimSpace(p[1:end])
			if len(in) >= 2 && (in[0] == '\'' || in[0] == '"') && in[len(in)-1] == in[0] {
				name := in[1 : len(in)-1]
				if strings.ContainsAny(name, "]") {
					return nil, fmt.Errorf("jsonPath %q: a name in brackets cannot hold ]", path)
				}
				steps = append(steps, name)
			} else {
				n, err := strconv.Atoi(in)
				if err != nil || n < 0 {
					return nil, fmt.Errorf("jsonPath %q: [%s] is neither an index nor a quoted name (wildcards and filters are not supported)", path, in)
				}
				steps = append(steps, n)
			}
			p = p[end+1:]
		default:
			return nil, fmt.Errorf("jsonPath %q: expected . or [ at %q", path, p)
		}
	}
	cur := json.RawMessage(doc)
	where := "$"
	for _, s := range steps {
		switch k := s.(type) {
		case string:
			var m map[string]json.RawMessage
			if json.Unmarshal(cur, &m) != nil {
				return nil, fmt.Errorf("jsonPath %q: %s is not an object", path, where)
			}
			v, ok := m[k]
			if !ok {
				return nil, fmt.Errorf("jsonPath %q: %s has no key %q", path, where, k)
			}
			cur, where = v, where+"."+k
		case int:
			var a []json.RawMessage
			if json.Unmarshal(cur, &a) != nil {
				return nil, fmt.Errorf("jsonPath %q: %s is not an array", path, where)
			}
			if k >= len(a) {
				return nil, fmt.Errorf("jsonPath %q: %s has %d items, no [%d]", path, where, len(a), k)
			}
			cur, where = a[k], where+"["+strconv.Itoa(k)+"]"
		}
	}
	return cur, nil
}

// handleCache keeps the last handle read: a loop of hub.read over one
// handle decodes its blob once. Blobs never change once written.
type handleCache struct {
	mu   sync.Mutex
	id   string
	blob *handleBlob
}

func (e *Engine) handleBlob(ctx context.Context, id string) (*handleBlob, error) {
	e.handles.mu.Lock()
	defer e.handles.mu.Unlock()
	if e.handles.id == id {
		return e.handles.blob, nil
	}
	b, err := store.Get[handleBlob](ctx, e.store, store.Blobs, id)
	if err != nil {
		return nil, err
	}
	e.handles.id, e.handles.blob = id, b
	return b, nil
}

// deleteHandles removes the blobs of the run's handles.
func (e *Engine) deleteHandles(ctx context.Context, runID string) {
	ids, err := e.store.List(ctx, store.Blobs)
	if err != nil {
		return
	}
	prefix := handlePrefix + runID + "-"
	e.handles.mu.Lock()
	if strings.HasPrefix(e.handles.id, prefix) {
		e.handles.id, e.handles.blob = "", nil
	}
	e.handles.mu.Unlock()
	for _, id := range ids {
		if strings.HasPrefix(id, prefix) {
			if err := e.store.Delete(ctx, store.Blobs, id); err != nil {
				e.log.Warn("removing a run's large result", "run", runID, "blob", id, "err", err)
			}
		}
	}
}
