package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/scrub"
)

// Credentials stay on their origin (I4). Code can join parts of a
// credential one upstream returned (each part alone is no secret) and pass
// the whole to another upstream: the envelope would show [secret], but the
// other upstream would receive the value. So before a call leaves the hub,
// its arguments are read for every credential the hub holds that is not
// the call's own (its connection's, or written in its source's config), in
// every form the scrubber decodes; a call that carries one is refused with
// CodeSecretToOtherOrigin, naming whose credential it is, never its value.

// CodeSecretToOtherOrigin is the ToolError code of a call refused because
// its arguments hold another origin's credential.
const CodeSecretToOtherOrigin = "secret_to_other_origin"

// checkOrigin refuses a call to the source ns through conn (resolved: ""
// only for a source that takes no credential) whose text (its arguments,
// or an OpenAPI request's URL, headers and body) holds a credential of
// another origin: of every credential the hub stores, or, before a person
// has approved the call (known), of those this process has read already,
// so that a call awaiting approval reads no credential (the code's own
// calls read those it got its data from).
func (h *Hub) checkOrigin(ctx context.Context, known bool, address, ns, conn string, texts ...string) *model.ToolError {
	if !known {
		h.knowEveryCredential(ctx)
	}
	sc := h.otherOrigins(ns, conn)
	if sc.Len() == 0 {
		return nil
	}
	var whose []string
	for _, text := range texts {
		for _, v := range sc.Which(text) {
			whose = append(whose, h.ownersOf(v)...)
		}
	}
	if len(whose) == 0 {
		return nil
	}
	slices.Sort(whose)
	whose = slices.Compact(whose)
	for i, o := range whose {
		if !strings.Contains(o, "/") {
			whose[i] = o + " (written in its config)"
		}
	}
	own := ns
	if conn != "" {
		own = ns + "/" + conn
	}
	return &model.ToolError{
		Code:    CodeSecretToOtherOrigin,
		Address: address,
		Message: fmt.Sprintf("%s was not called: its arguments hold a credential of %s, and a credential is sent only to its own source (this call goes to %s)", address, strings.Join(whose, ", "), own),
		Status:  403,
		Hint:    "pass data between sources, never a credential; each source gets its own from the hub",
	}
}

// checkArgs is checkOrigin for a call's arguments, with its connection
// resolved as the call will resolve it.
func (h *Hub) checkArgs(ctx context.Context, known bool, tl *model.Tool, conn string, args json.RawMessage) *model.ToolError {
	ns := tl.Namespace()
	if conn == "" {
		c, err := h.defaultConnection(ctx, ns)
		if err != nil {
			return &model.ToolError{Code: "connection_error", Message: err.Error(), Status: 500}
		}
		conn = c
	}
	return h.checkOrigin(ctx, known, tl.Address, ns, conn, string(args))
}

// otherOrigins is the scrubber of every credential the hub knows whose
// owners are all others than ns/conn and ns's config.
func (h *Hub) otherOrigins(ns, conn string) *scrub.Scrubber {
	key := ns + "/" + conn
	h.secrets.mu.Lock()
	defer h.secrets.mu.Unlock()
	if sc, ok := h.secrets.others[key]; ok {
		return sc
	}
	var vals []string
	for v, owners := range h.secrets.owners {
		if !slices.ContainsFunc(owners, func(o string) bool { return o == key || o == ns }) {
			vals = append(vals, v)
		}
	}
	sc := scrub.New(vals...)
	if h.secrets.others == nil {
		h.secrets.others = map[string]*scrub.Scrubber{}
	}
	h.secrets.others[key] = sc
	return sc
}

func (h *Hub) ownersOf(v string) []string {
	h.secrets.mu.Lock()
	defer h.secrets.mu.Unlock()
	return slices.Clone(h.secrets.owners[v])
}

// refusal carries a ToolError through a call's error path.
type refusal struct{ *model.ToolError }

func (r *refusal) Error() string { return r.Message }
