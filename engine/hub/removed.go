package hub

import (
	"context"
	"slices"
	"sort"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/policy"
	"github.com/capabilities-sh/capabilities/store"
)

// RemovedTool is a tool a person reviewed that its source no longer lists.
type RemovedTool struct {
	Address  string `json:"address"`
	Contract string `json:"contract"` // the contract that was reviewed
	// Description is the reviewed version's, when its snapshot is kept.
	Description string `json:"description,omitempty"`
}

// RemovedTools lists the reviewed tools whose source is still in the hub
// but no longer lists them, by address. (Removing a source forgets its
// reviews, so its tools are not listed here.)
func (h *Hub) RemovedTools(ctx context.Context) ([]RemovedTool, error) {
	p, err := h.Policy(ctx)
	if err != nil {
		return nil, err
	}
	recs, err := h.Sources(ctx)
	if err != nil {
		return nil, err
	}
	listed := map[string]bool{}
	present := map[string]bool{}
	for _, rec := range recs {
		if rec.Manifest == nil {
			continue // never listed: nothing can have gone
		}
		present[rec.Source.Namespace] = true
		for _, t := range rec.Manifest.Tools {
			listed[t.Address] = true
		}
	}
	out := []RemovedTool{}
	for addr, contract := range p.Reviewed {
		ns, _, ok := model.SplitAddress(addr)
		if !ok || !present[ns] || listed[addr] {
			continue
		}
		rt := RemovedTool{Address: addr, Contract: contract}
		if s, err := store.Get[snapshot](ctx, h.store, store.Blobs, "contract-"+contract); err == nil {
			rt.Description = s.Description
		}
		out = append(out, rt)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out, nil
}

// ForgetRemoved records that a person saw tools go: their reviews and the
// rules on them are dropped, so a tool that comes back is new and asks.
// An address its source lists again, or already forgotten, is left alone.
// It returns the addresses it forgot.
func (h *Hub) ForgetRemoved(ctx context.Context, addresses []string) ([]string, error) {
	gone, err := h.RemovedTools(ctx)
	if err != nil {
		return nil, err
	}
	var drop []string
	for _, g := range gone {
		if slices.Contains(addresses, g.Address) {
			drop = append(drop, g.Address)
		}
	}
	if len(drop) == 0 {
		return nil, nil
	}
	err = h.updatePolicy(ctx, func(p *policy.Policy) error {
		for _, addr := range drop {
			delete(p.Reviewed, addr)
			p.Rules = slices.DeleteFunc(p.Rules, func(r policy.Rule) bool { return r.Target == addr })
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return drop, nil
}
