package cli

import (
	"errors"
	"io"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/index"
	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/capabilities-sh/capabilities/engine/skill"
	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/engine/typegen"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/spf13/cobra"
)

// Error codes: what a failed --json command prints in
// {"error":{"code":…}}. They are stable; scripts match on them.
const (
	codeUsage               = "usage"                // how the command was called (exit 2)
	codeNoHub               = "no_hub"               // no hub at CAPABILITIES_HOME yet
	codeNotFound            = "not_found"            // an unknown namespace, tool, target or run
	codeCodeTooLarge        = "code_too_large"       // code over the size limit
	codeUpstreamUnavailable = "upstream_unavailable" // an upstream could not be started or reached
	codeUpstreamTimeout     = "upstream_timeout"     // an upstream did not answer a call in time
	codeToolError           = "tool_error"           // the tool answered with an error
	codePolicyDenied        = "policy_denied"        // a deny rule covers the call (hub call)
	codeInterrupted         = "interrupted"          // SIGINT or SIGTERM
	codeError               = "error"                // anything else
)

// codedError is an error with a stable code and, optionally, a hint.
type codedError struct {
	code string
	hint string
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// classify gives err its code and hint: its own when it is a codedError,
// else by what it wraps.
func classify(err error, cmd *cobra.Command) *codedError {
	var ce *codedError
	if errors.As(err, &ce) {
		return ce
	}
	c := &codedError{code: codeError, err: err}
	var ue usageError
	switch {
	case errors.As(err, &ue) || isCobraUsage(err) || errors.Is(err, run.ErrNoCode):
		c.code = codeUsage
		if cmd != nil {
			c.hint = "run '" + cmd.CommandPath() + " --help' for usage"
		}
	case errors.Is(err, store.ErrNoHub):
		c.code, c.hint = codeNoHub, "run `capabilities hub init` first"
	case errors.Is(err, hub.ErrUnknownNamespace), errors.Is(err, index.ErrUnknownNamespace), errors.Is(err, hub.ErrUnknownTool),
		errors.Is(err, typegen.ErrUnknownTarget), errors.Is(err, run.ErrUnknownRun),
		errors.Is(err, skill.ErrNotFound), errors.Is(err, hub.ErrUnknownProfile):
		c.code = codeNotFound
	case errors.Is(err, run.ErrCodeTooLarge):
		c.code, c.hint = codeCodeTooLarge, "send less code, or split the work across runs"
	case errors.Is(err, source.ErrCallTimeout):
		c.code, c.hint = codeUpstreamTimeout, "a slow tool gets more time with `capabilities hub add --call-timeout` or CAPABILITIES_CALL_TIMEOUT"
	case errors.Is(err, hub.ErrDenied):
		c.code = codePolicyDenied
	case errors.Is(err, hub.ErrUpstreamUnavailable):
		c.code, c.hint = codeUpstreamUnavailable, "check it with `capabilities hub doctor`"
	}
	return c
}

// jsonError is what a failed --json command prints on stdout.
type jsonError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Hint    string `json:"hint,omitempty"`
	} `json:"error"`
}

// printError writes err as a JSON error object on stdout.
func (e *env) printError(c *codedError) {
	var je jsonError
	je.Error.Code, je.Error.Message, je.Error.Hint = c.code, c.err.Error(), c.hint
	_ = e.printJSON(je)
}

// wantsJSON reports whether the command line asked for --json: the parsed
// flag, or, when parsing stopped before it (an unknown command or flag), the
// word itself before any "--".
func wantsJSON(cmd *cobra.Command, args []string) bool {
	if cmd != nil {
		if f := cmd.Flags().Lookup("json"); f != nil && f.Changed {
			return f.Value.String() == "true"
		}
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--json" || strings.EqualFold(a, "--json=true") {
			return true
		}
	}
	return false
}

// countingWriter counts what is written through it: a command that
// already printed its JSON before it failed gets no second document.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}
