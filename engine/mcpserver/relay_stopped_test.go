package mcpserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestHubStoppedSaysWhatHappened: the error an agent gets when the hub its
// session relayed to stopped says in words which hub, when, whether the
// call happened, and what the person can do, without the Go error's
// addresses and syscalls; the code stays -32603.
func TestHubStoppedSaysWhatHappened(t *testing.T) {
	addr := "127.0.0.1:4791"
	// What a POST to a killed hub's port fails with.
	refused := &url.Error{Op: "Post", URL: "http://" + addr + "/mcp", Err: &net.OpError{Op: "dial", Net: "tcp",
		Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}}
	ep := Endpoint{URL: "http://" + addr + "/mcp", PID: 4242}
	fix := []string{"start the desktop app or `capabilities hub serve --http` again", "restart the agent's session"}
	for _, tc := range []struct {
		name  string
		cause error
		sent  bool
		want  []string
	}{
		{"refused", refused, false, []string{"stopped before this call", "nothing accepts connections at its address any more", "was not sent to it, so nothing of it happened"}},
		{"cut", fmt.Errorf("reading the answer: %w", io.ErrUnexpectedEOF), true, []string{"stopped while this call was under way", "its connection closed before it answered", "Whether the call happened is unknown", "`capabilities hub runs`"}},
		{"token", errTokenRefused, false, []string{"no longer took this session before this call", "bearer token", "was not sent to it"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := hubStoppedReply(json.RawMessage("7"), newHubStop(ep, tc.cause), tc.sent)
			b, _ := json.Marshal(r)
			msg := r.Error.Message
			if r.Error.Code != -32603 || !strings.HasPrefix(string(b), `{"jsonrpc":"2.0","id":7,"error"`) {
				t.Errorf("want a -32603 error for id 7, got %s", b)
			}
			want := append([]string{"The capabilities hub this session relayed to (pid 4242, " + ep.URL + ")"}, tc.want...)
			for _, w := range append(want, fix...) {
				if !strings.Contains(msg, w) {
					t.Errorf("the error does not say %q:\n%s", w, msg)
				}
			}
			for _, not := range []string{"EOF", "dial tcp", "connection refused", "Post \""} {
				if strings.Contains(msg, not) {
					t.Errorf("the error shows the Go error (%q):\n%s", not, msg)
				}
			}
		})
	}
}
