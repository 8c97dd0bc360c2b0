package hub

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/capabilities-sh/capabilities/store"
)

// A direct call that waits for a person (awaiting_approval or
// awaiting_connection) is owed to the agent that made it: the agent is told
// to make the same call again once the person decided. The store keeps
// which run that is (blobs/direct-<digest of the address and the canonical
// arguments>.json), so the call made again continues it even from another
// process (the agent's `serve --stdio` restarted meanwhile, or a second
// session), and is handed its outcome once; the owed record then goes, and
// the call after that is a new run. Without it, a restarted agent would make
// a new run and a person approving again would make the write twice.

// owedFor is how long a run that ended (decided by a person elsewhere) stays
// owed: the same call made later than that is a new call.
const owedFor = 24 * time.Hour

const owedPrefix = "direct-"

type owedRecord struct {
	Run string `json:"run"`
}

// owedID names the owed record of a call: the address and the arguments
// with every object's keys sorted, so the same call is the same record.
func owedID(address string, args json.RawMessage) string {
	d := json.NewDecoder(bytes.NewReader(args))
	d.UseNumber() // 2^53+1 stays itself
	var v any
	if d.Decode(&v) == nil {
		args, _ = json.Marshal(v)
	}
	sum := sha256.Sum256(append([]byte(address+"\x00"), args...))
	return owedPrefix + hex.EncodeToString(sum[:16])
}

// continueOwed continues the run owed for the call, if there is one still
// owed; nil, nil when the call is a new one.
func (h *Hub) continueOwed(ctx context.Context, address string, args json.RawMessage) (*Envelope, error) {
	id := owedID(address, args)
	o, err := store.Get[owedRecord](ctx, h.store, store.Blobs, id)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			h.log.Warn("reading a direct call's waiting run; making a new call", "address", address, "err", err)
			h.forgetOwed(ctx, id)
		}
		return nil, nil
	}
	eng := h.runEngine()
	r, err := eng.Get(ctx, o.Run)
	switch {
	case errors.Is(err, run.ErrUnknownRun):
		h.forgetOwed(ctx, id) // pruned
		return nil, nil
	case err != nil:
		return nil, err
	case !sameCall(r.Code, id) || r.Status.Done() && time.Since(r.UpdatedAt) > owedFor:
		h.forgetOwed(ctx, id)
		return nil, nil
	}
	env, err := h.Resume(ctx, o.Run)
	if err == nil {
		h.NoteDirect(ctx, address, args, env)
	}
	return env, err
}

// sameCall says the run's code is a direct call whose owed record is id.
func sameCall(code, id string) bool {
	address, args, ok := directCall(code)
	return ok && owedID(address, args) == id
}

// NoteDirect keeps what a direct call's outcome owes: a run waiting for a
// person stays owed to the same call made again; anything else has now been
// handed over. mcpserver calls it for a run it resumed itself (the client's
// elicitation form).
func (h *Hub) NoteDirect(ctx context.Context, address string, args json.RawMessage, env *Envelope) {
	id := owedID(address, args)
	if !strings.HasPrefix(env.Status, "awaiting_") {
		h.forgetOwed(ctx, id)
		return
	}
	if err := h.store.Put(ctx, store.Blobs, id, owedRecord{Run: env.RunID}); err != nil {
		h.log.Warn("keeping a direct call's waiting run; the same call made again in another process will start a new run", "run", env.RunID, "err", err)
	}
}

func (h *Hub) forgetOwed(ctx context.Context, id string) {
	if err := h.store.Delete(ctx, store.Blobs, id); err != nil {
		h.log.Warn("forgetting a direct call's waiting run", "record", id, "err", err)
	}
}

// pruneOwed forgets the owed records whose run was pruned.
func (h *Hub) pruneOwed(ctx context.Context) {
	ids, err := h.store.List(ctx, store.Blobs)
	if err != nil {
		return
	}
	eng := h.runEngine()
	for _, id := range ids {
		if !strings.HasPrefix(id, owedPrefix) {
			continue
		}
		o, err := store.Get[owedRecord](ctx, h.store, store.Blobs, id)
		if err == nil {
			_, err = eng.Get(ctx, o.Run)
		}
		if errors.Is(err, run.ErrUnknownRun) || errors.As(err, new(*store.CorruptError)) {
			h.forgetOwed(ctx, id)
		}
	}
}
