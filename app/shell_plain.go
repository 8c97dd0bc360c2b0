//go:build !desktop

package app

import (
	"context"

	"github.com/capabilities-sh/capabilities/engine/hub"
)

// Windows says what the app shows its screens in.
const Windows = "the browser (a build without the desktop tag has no windows of its own)"

type plainShell struct{ opts shellOptions }

func newShell(opts shellOptions) shell { return plainShell{opts} }

// run runs body with the console's pages in the browser.
func (s plainShell) run(ctx context.Context, body func(context.Context, func(*hub.Hub) windows) error) error {
	return body(ctx, func(h *hub.Hub) windows { return newPages(ctx, h, s.opts.log, s.opts.open) })
}
