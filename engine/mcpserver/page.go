package mcpserver

import "context"

// PageOpener shows a person the calls a run waits on when the client cannot
// ask them itself (no form elicitation): the host opens the approval page on
// the person's screen. It is declared here and implemented by the host (the
// CLI's serve), so this package never imports a person's channel (I2).
type PageOpener interface {
	// Open shows the page for the pending calls ids of run runID. A call
	// that already had a page is not shown again: a retry of the same call
	// returns Page{Shown: true} and opens nothing. Nothing it returns may
	// hold the page's address or link: the model reads the answer.
	Open(ctx context.Context, runID string, ids []string) (Page, error)
}

// Page is what Open did, in words the model may read.
type Page struct {
	// Shown says a page for these calls is on the person's screen, opened
	// now or for an earlier try of the same calls.
	Shown bool
	// Where the person sees it, as a clause ("the desktop app shows it in a
	// notification"); empty: "a page opened on the person's screen".
	Where string
	// Why no page was shown, as a clause ("there is no display or browser
	// on this machine"); empty when Shown.
	Why string
	// Only says Where is the person's only way to decide: there is no
	// terminal with `hub approve` behind this hub (the hosted hub), so the
	// text names no command.
	Only bool
}
