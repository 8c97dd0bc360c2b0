package hub

import (
	"errors"
	"fmt"

	"github.com/capabilities-sh/capabilities/engine/source"
)

// ErrUpstreamUnavailable is matched (errors.Is) by the error of a call
// whose upstream could not be started or reached.
var ErrUpstreamUnavailable = errors.New("upstream unavailable")

// ErrDenied is matched by the error of a person's own call (Call) to a tool
// a deny rule covers.
var ErrDenied = errors.New("denied by policy")

// scrubbedError is an error's text with every secret removed. It still
// matches the sentinel errors the original wrapped (errors.Is), and kind,
// but errors.As cannot reach the original's values.
type scrubbedError struct {
	msg  string
	err  error // the original, for errors.Is only
	kind error // an extra sentinel, or nil
}

func (e *scrubbedError) Error() string { return e.msg }

func (e *scrubbedError) Is(target error) bool {
	return (e.kind != nil && target == e.kind) || errors.Is(e.err, target)
}

// scrubErr is err with the secrets scrubbed from its text; kind, when not
// nil, is a sentinel it matches besides those err wraps.
func (h *Hub) scrubErr(err error, kind error) error {
	return &scrubbedError{msg: h.Scrub(err.Error()), err: err, kind: kind}
}

// timeoutText says how long a call waited for its upstream.
func timeoutText(te *source.TimeoutError) string {
	msg := "the upstream did not answer within " + source.Seconds(te.Timeout)
	if te.Strays > 0 {
		msg += fmt.Sprintf(" (meanwhile it wrote %d non-protocol lines on stdout)", te.Strays)
	}
	return msg
}
