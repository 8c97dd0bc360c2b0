package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/harness"
	"github.com/godbus/dbus/v5"
)

// connectResult is what `capabilities hub connect --json` prints.
type connectResult struct {
	Files []struct {
		Harness string `json:"harness"`
		Path    string `json:"path"`
		Status  string `json:"status"` // changed, unchanged, kept, error
		Error   string `json:"error"`
	} `json:"files"`
	Manual []struct {
		Harness string `json:"harness"`
		Path    string `json:"path"`
	} `json:"manual"`
	Snapshot string `json:"snapshot"`
}

// cliPath is the capabilities CLI the app runs: the one beside the app's
// binary (how the packages install them), else the one on PATH.
func cliPath() (string, error) {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "capabilities")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath("capabilities")
	if err != nil {
		return "", fmt.Errorf("finding the capabilities CLI (beside this app or on PATH): %w", err)
	}
	return p, nil
}

// connectAgents is the tray's "Connect agents…": `capabilities hub
// connect` (one `capabilities` entry written into each agent's MCP config
// found, every file snapshotted first; `capabilities rollback` undoes it),
// then a notification says what it did.
func (a *App) connectAgents() {
	ctx := a.ctx
	a.records.Go(func() {
		summary, body := connect(ctx)
		a.log.Info("connected the agents", "summary", summary, "detail", body)
		select {
		case a.events <- func() { a.tell(summary, body) }:
		case <-ctx.Done():
		}
	})
}

// connect runs `capabilities hub connect --json` and says what it did.
func connect(ctx context.Context) (summary, body string) {
	bin, err := cliPath()
	if err != nil {
		return "Could not connect the agents", err.Error()
	}
	cmd := exec.CommandContext(ctx, bin, "hub", "connect", "--json")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var r connectResult
	if jerr := json.Unmarshal(out, &r); jerr != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" && err != nil {
			msg = err.Error()
		}
		return "Could not connect the agents", "capabilities hub connect: " + msg
	}
	return connectSummary(r)
}

// connectSummary says what connect did, from its --json.
func connectSummary(r connectResult) (summary, body string) {
	var changed, already, kept, failed []string
	for _, f := range r.Files {
		switch f.Status {
		case "changed":
			changed = append(changed, f.Harness)
		case "unchanged":
			already = append(already, f.Harness)
		case "kept": // the agent has its own capabilities entry: left as it is
			kept = append(kept, f.Harness)
		default:
			failed = append(failed, f.Harness+": "+f.Error)
		}
	}
	var lines []string
	switch {
	case len(changed) > 0:
		summary = "Connected " + strings.Join(unique(changed), ", ")
		lines = append(lines, "Restart them to reach the hub. `capabilities rollback` undoes it.")
	case len(failed) > 0:
		summary = "Could not connect the agents"
	case len(already) > 0:
		summary = "The agents are connected already"
	case len(kept) > 0:
		summary = "The agents have their own capabilities entry"
	default:
		summary = "No agent's config was found"
		lines = append(lines, "Install Claude Code, Codex, Cursor, … or run `capabilities hub connect --client NAME`.")
	}
	if len(already) > 0 && len(changed) > 0 {
		lines = append(lines, "Already connected: "+strings.Join(unique(already), ", ")+".")
	}
	if len(kept) > 0 {
		lines = append(lines, "Left as they are, with their own capabilities entry: "+strings.Join(unique(kept), ", ")+" (remove it and connect again to use the hub's).")
	}
	lines = append(lines, failed...)
	for _, m := range r.Manual {
		lines = append(lines, m.Harness+": add the entry by hand (capabilities hub connect prints it).")
	}
	return summary, strings.Join(lines, "\n")
}

// unique is the harnesses named once each, as people write them ("Claude
// Code").
func unique(names []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range names {
		if seen[x] {
			continue
		}
		seen[x] = true
		if h, ok := harness.Lookup(x); ok && h.Title != "" {
			x = h.Title
		}
		out = append(out, x)
	}
	return out
}

// tell says something to the person: a notification, else the log.
func (a *App) tell(summary, body string) {
	if a.notes == nil {
		a.log.Warn(summary, "detail", body)
		return
	}
	if err := a.notes.tell(summary, body); err != nil {
		a.log.Warn("raising a notification", "summary", summary, "err", errors.Unwrap(err))
	}
}

// tell raises a notification that only informs.
func (n *notifier) tell(summary, body string) error {
	if n.markup {
		body = html.EscapeString(body)
	}
	hints := map[string]dbus.Variant{"urgency": dbus.MakeVariant(byte(1))}
	var id uint32
	if err := n.obj.Call(notifyName+".Notify", 0, "capabilities", uint32(0), "dialog-information", summary, body, []string{}, hints, int32(-1)).Store(&id); err != nil {
		return fmt.Errorf("raising a notification: %w", err)
	}
	return nil
}
