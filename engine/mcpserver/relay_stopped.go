package mcpserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
)

// What the agent is told when the hub its session relayed to stops: in
// words a person reads in the agent's transcript, what happened, whether
// the call happened, and what to do. The JSON-RPC code stays -32603.

// hubStop is what the shim knows of a hub that stopped.
type hubStop struct {
	who  string // the hub, its pid and address
	gone bool   // it stopped (else it no longer takes this session)
	how  string // how the shim found out, in words
}

// newHubStop says which hub stopped and how the shim found out (cause, the
// error of the exchange that failed).
func newHubStop(ep Endpoint, cause error) hubStop {
	h := hubStop{who: fmt.Sprintf("the capabilities hub this session relayed to (pid %d, %s)", ep.PID, ep.URL), gone: true}
	switch {
	case errors.Is(cause, errTokenRefused), errors.Is(cause, errSessionGone):
		h.gone, h.how = false, cause.Error()
	case errors.Is(cause, errNotTheHub):
		h.how = cause.Error()
	default:
		h.how = "killed, crashed or quit: " + plainCause(cause)
	}
	return h
}

// String is the hub's stop without when it was found.
func (h hubStop) String() string {
	if !h.gone {
		return fmt.Sprintf("%s no longer takes this session (%s)", h.who, h.how)
	}
	return fmt.Sprintf("%s stopped (%s)", h.who, h.how)
}

// sentence says it as a sentence, with when: before this call, or while
// it was under way (sent).
func (h hubStop) sentence(sent bool) string {
	when := "before this call"
	if sent {
		when = "while this call was under way"
	}
	verb := "stopped"
	if !h.gone {
		verb = "no longer took this session"
	}
	return fmt.Sprintf("%s%s %s %s (%s).", strings.ToUpper(h.who[:1]), h.who[1:], verb, when, h.how)
}

// plainCause says what the shim saw of a stopped hub, without the Go
// error's addresses and syscalls (the shim's log on stderr keeps those).
func plainCause(err error) string {
	var op *net.OpError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "nothing accepts connections at its address any more"
	case errors.As(err, &op) && op.Op == "dial":
		return fmt.Sprintf("its address cannot be reached (%v)", op.Err)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "its connection closed before it answered"
	}
	return err.Error()
}

// hubStoppedFix is what the person can do once the shim serves the session
// on its own engine.
const hubStoppedFix = "This session goes on with its own engine, in this agent's `capabilities hub serve --stdio` process (with its own upstream servers). " +
	"To share the hub again, start the desktop app or `capabilities hub serve --http` again, then restart the agent's session."

// hubStoppedReply answers request id after the hub stopped; sent says
// whether the request may have reached the hub.
func hubStoppedReply(id json.RawMessage, h hubStop, sent bool) *rpcError {
	if !sent {
		return errorReply(id, -32603, "%s This call was not sent to it, so nothing of it happened: make it again, and it runs on this session's own engine. %s", h.sentence(false), hubStoppedFix)
	}
	return errorReply(id, -32603, "%s Whether the call happened is unknown (its outcome is unknown): the hub may have carried it out before it stopped. "+
		"Check with `capabilities hub runs` (the runs and their calls) before making it again. %s", h.sentence(true), hubStoppedFix)
}

// noEngineReply answers request id when the hub could not be used (why)
// and this process's own engine did not start either.
func noEngineReply(id json.RawMessage, why string, localErr error) *rpcError {
	return errorReply(id, -32603, "%s, and this session's own engine did not start either (%v): nothing can serve it now. "+
		"Start the desktop app or `capabilities hub serve --http` again, then restart the agent's session.", why, localErr)
}
