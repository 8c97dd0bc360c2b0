package hub

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/store"
)

// Report is what `doctor` shows.
type Report struct {
	Dir         string         `json:"dir,omitempty"`
	Schema      int            `json:"schema"`
	HubID       string         `json:"hubId"`
	Permissions []string       `json:"permissionProblems"`
	Secrets     string         `json:"secrets"`
	Sources     []SourceHealth `json:"sources"`
}

// SourceHealth is one source's state as doctor found it now.
type SourceHealth struct {
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	Health    string `json:"health"` // ok | error
	Error     string `json:"error,omitempty"`
	Protocol  string `json:"protocol,omitempty"`
	Tools     int    `json:"tools"`
	Stderr    string `json:"stderr,omitempty"` // the last lines of a stdio upstream's stderr
	Millis    int64  `json:"ms"`
}

// Doctor checks the store and connects to every source (in parallel, each
// bounded by the connect timeout).
func (h *Hub) Doctor(ctx context.Context) (*Report, error) {
	r := &Report{Permissions: []string{}, Sources: []SourceHealth{}}
	if f, ok := h.store.(*store.File); ok {
		r.Dir, r.Schema, r.HubID = f.Dir(), f.Hub().Schema, f.Hub().ID
		r.Permissions, _ = store.CheckModes(f.Dir())
	} else {
		r.Schema = store.SchemaVersion
	}
	r.Secrets = h.SecretStatus()
	recs, err := h.Sources(ctx)
	if err != nil {
		return nil, fmt.Errorf("checking sources: %w", err)
	}
	r.Sources = make([]SourceHealth, len(recs))
	var wg sync.WaitGroup
	for i, rec := range recs {
		wg.Go(func() {
			sh := SourceHealth{Namespace: rec.Source.Namespace, Kind: rec.Source.Kind}
			protocol := ""
			if rec.Manifest != nil {
				protocol = rec.Manifest.Protocol
			}
			opts := h.sourceOptions()
			opts.Protocol = protocol
			start := time.Now()
			cred, cerr := h.credential(ctx, &rec.Source, "")
			if cerr != nil {
				cred = nil // check what runs without it
			}
			s, err := source.ConnectWith(ctx, rec.Source, cred, opts)
			if err == nil {
				var n int
				m, lerr := s.ListTools(ctx)
				if lerr == nil {
					n = len(m.Tools)
				}
				sh.Protocol, sh.Tools, err = s.Protocol(), n, lerr
				sh.Stderr = h.Scrub(s.Stderr(5))
				s.Close()
			}
			sh.Millis = time.Since(start).Milliseconds()
			sh.Health = "ok"
			if err != nil {
				sh.Health, sh.Error = "error", h.Scrub(err.Error())
			}
			r.Sources[i] = sh
		})
	}
	wg.Wait()
	bad, err := h.Unreadable(ctx)
	if err != nil {
		return nil, fmt.Errorf("checking sources: %w", err)
	}
	for _, b := range bad {
		r.Sources = append(r.Sources, SourceHealth{Namespace: b.Namespace, Health: "error", Error: fmt.Sprintf("left out of the hub: %v (%s)", b.Err, b.Fix())})
	}
	return r, nil
}
