package cli

import (
	"bytes"

	"github.com/capabilities-sh/capabilities/engine/scrub"
)

// scrubbedOut runs print with its standard output held back, then writes
// that output with every secret sc knows replaced: JSON as JSON values
// (escaped strings decoded), text as text. It is the last exit of what a
// run or a tool gave back (hub exec, runs show, hub call), scrubbed again
// whatever scrubbed it before.
func (e *env) scrubbedOut(sc *scrub.Scrubber, asJSON bool, print func() error) error {
	if sc.Len() == 0 {
		return print()
	}
	stdout := e.stdout
	var buf bytes.Buffer
	e.stdout = &buf
	err := print()
	e.stdout = stdout
	out := buf.Bytes()
	if asJSON {
		out = sc.JSON(out)
	} else {
		out = sc.Bytes(out)
	}
	if _, werr := e.stdout.Write(out); werr != nil && err == nil {
		err = werr
	}
	return err
}
