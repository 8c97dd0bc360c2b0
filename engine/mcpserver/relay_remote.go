package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// A hub on another machine (a server behind nginx, docs/serve-http.md) is
// reached by `serve --stdio --hub URL`: the same Shim, Remote, relays the
// agent's session to the hub's /mcp with the bearer token `connect --hub`
// kept in this machine's keychain. There is no local engine behind it: a
// remote hub that does not answer, or refuses the token, is an error for
// the request that finds out, and the next request tries the hub again.

// remoteClient is the HTTP client of a remote hub: TLS as the system
// trusts it, the environment's proxy (HTTPS_PROXY, NO_PROXY), at most
// conns connections.
func remoteClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConnsPerHost: min(conns, 16),
		MaxConnsPerHost:     conns,
	}}
}

// remoteFix says what the person can do when the remote hub cannot be used.
const remoteFix = "Check that the hub serves (its /readyz), that this machine reaches it, and that its token is still the one `capabilities connect --hub URL` was given (`capabilities hub http-token` on the server prints it; run connect --hub again with the new one)."

// remoteFailed answers m, when it is a request, with an error saying why
// the remote hub could not serve it; the session stays with the hub, and
// the next request goes to it again. A notification is dropped, and
// logged.
func (s *Shim) remoteFailed(m shimMsg, cause error) {
	what := fmt.Sprintf("the capabilities hub at %s could not be reached: %v", s.Endpoint.URL, plainCause(cause))
	if errors.Is(cause, errTokenRefused) {
		what = fmt.Sprintf("the capabilities hub at %s refuses this machine's bearer token (HTTP 401): it was changed on the server, or connect --hub was given another hub's", s.Endpoint.URL)
	}
	if !m.isRequest() {
		s.Logger.Warn("a message to the remote hub was dropped", "method", m.Method, "url", s.Endpoint.URL, "err", cause)
		return
	}
	s.Logger.Warn("the remote hub did not serve a request", "method", m.Method, "url", s.Endpoint.URL, "err", cause)
	sent := ""
	switch {
	case m.Method == "initialize":
	case wasSent(cause):
		sent = " This request's outcome is unknown: the hub may have carried it out (`capabilities hub runs` on the server lists the runs)."
	default:
		sent = " This request was not sent to it, so nothing of it happened: send it again once the hub answers."
	}
	s.write(errorReply(m.ID, -32603, "%s.%s %s", what, sent, remoteFix))
}

// remoteFrozenReply answers a request given up on because the remote hub
// left its liveness probe unanswered for silent.
func remoteFrozenReply(id json.RawMessage, url string, silent time.Duration, sent bool) *rpcError {
	what := fmt.Sprintf("the capabilities hub at %s has not answered for %s (it, or the network to it, is stuck)", url, silent)
	if !sent {
		return errorReply(id, -32603, "%s; this request was not sent to it, so nothing of it happened: send it again. %s", what, remoteFix)
	}
	return errorReply(id, -32603, "%s; this request's outcome is unknown: the hub may still carry it out (`capabilities hub runs` on the server lists the runs). The next request goes to the hub again. %s", what, remoteFix)
}

// ErrRemoteToken is CheckRemote's error when the hub refuses the token.
var ErrRemoteToken = errors.New("the hub refuses this token (HTTP 401)")

// CheckRemote opens a session with the hub at endpoint (its /mcp URL) with
// token, as an agent would, and closes it: nil when a capabilities hub
// answered initialize. A refused token is ErrRemoteToken; anything else
// that answers is said.
func CheckRemote(ctx context.Context, endpoint, token string) error {
	hc := remoteClient(2)
	defer hc.CloseIdleConnections()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"capabilities-connect","version":"1"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Method", "initialize")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		return ErrRemoteToken
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d to initialize: %s", resp.StatusCode, firstLine(raw))
	}
	var got []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		_ = readSSE(bytes.NewReader(raw), func(msg []byte) {
			if got == nil {
				got = msg
			}
		})
	} else {
		got = raw
	}
	var r struct {
		Result struct {
			ServerInfo struct {
				Name string `json:"name"`
			} `json:"serverInfo"`
		} `json:"result"`
	}
	if json.Unmarshal(got, &r) != nil || r.Result.ServerInfo.Name == "" {
		return fmt.Errorf("what answers there is not an MCP server (its answer to initialize: %s)", firstLine(raw))
	}
	if r.Result.ServerInfo.Name != serverName {
		return fmt.Errorf("what answers there is not a capabilities hub (it calls itself %q)", r.Result.ServerInfo.Name)
	}
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		if dreq, err := http.NewRequestWithContext(ctx, http.MethodDelete, endpoint, nil); err == nil {
			dreq.Header.Set("Authorization", "Bearer "+token)
			dreq.Header.Set("Mcp-Session-Id", sid)
			if dresp, err := hc.Do(dreq); err == nil {
				dresp.Body.Close()
			}
		}
	}
	return nil
}

// firstLine is b's first line, at most 200 bytes, for an error message.
func firstLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
