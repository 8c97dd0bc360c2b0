package app

import (
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/harness"
	"github.com/capabilities-sh/capabilities/engine/harness/watch"
	"github.com/google/go-cmp/cmp"
)

// TestOfferText: an import offer's notification ("Add" runs the command)
// shows the command's hidden characters as escapes, and a long command as
// its head and tail with how much is not shown, so the rest of the body
// (where, as which source) stays in sight; short ones are as before.
func TestOfferText(t *testing.T) {
	offer := func(name string, args ...string) watch.Offer {
		return watch.Offer{Title: "Claude Code", Path: "/h/.claude.json",
			Server:   harness.Server{Name: name, Kind: "stdio", Command: "node", Args: args},
			Proposal: harness.Proposal{Namespace: "weather"}}
	}
	tests := []struct {
		name          string
		o             watch.Offer
		summary, body string
	}{
		{"plain", offer("weather", "/opt/weather/server.js"),
			"Claude Code added `weather` — add it to the hub?",
			"node /opt/weather/server.js\nin /h/.claude.json\nIt would be the hub's source \"weather\"; its tools wait for your review."},
		{"bidi", offer("we\u202eather\nx", "\u202eexe.sj.ekaf"),
			`Claude Code added ` + "`" + `we\u202eather\nx` + "`" + ` — add it to the hub?`,
			`node '\u202eexe.sj.ekaf'` + "\nin /h/.claude.json\nIt would be the hub's source \"weather\"; its tools wait for your review."},
		{"long", offer("weather", "/opt/weather/server.js", strings.Repeat("x", 1500), "--then", "run.sh"),
			"Claude Code added `weather` — add it to the hub?",
			"node /opt/weather/server.js " + strings.Repeat("x", 132) + " …[1302 characters not shown]… " + strings.Repeat("x", 66) + " --then run.sh" +
				"\nin /h/.claude.json\nIt would be the hub's source \"weather\"; its tools wait for your review."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			summary, body := offerText(tt.o, false)
			if diff := cmp.Diff([2]string{tt.summary, tt.body}, [2]string{summary, body}); diff != "" {
				t.Errorf("offerText (-want +got):\n%s", diff)
			}
		})
	}
}
