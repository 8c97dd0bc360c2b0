package mcpserver

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxBodyBytes bounds an HTTP request body: the largest execute (64 KB of
// code, escaped) fits with room to spare.
const MaxBodyBytes = 1 << 20

// HTTPHandler serves the MCP endpoint at /mcp for every client era (the
// 2026-07-28 stateless requests and older stateful sessions), behind the
// checks a loopback service needs: the bearer token (compared in constant
// time), a loopback Host and Origin (DNS rebinding), and a body limit.
func (s *Server) HTTPHandler(token string) http.Handler {
	getServer := func(*http.Request) *mcp.Server { return s.mcp }
	// go-sdk serves 2026-07-28 only from a stateless handler and rejects it
	// (UnsupportedProtocolVersion) from a stateful one, while older clients
	// need a stateful session (server-to-client elicitation). Route each
	// request by the protocol version it declares.
	stateful := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Logger:              s.opts.Logger,
		MaxRequestBodyBytes: MaxBodyBytes,
	})
	stateless := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Logger:              s.opts.Logger,
		MaxRequestBodyBytes: MaxBodyBytes,
		Stateless:           true,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
			deny(w, http.StatusForbidden, fmt.Sprintf("Host %q is not a loopback address; this endpoint answers only 127.0.0.1, localhost or [::1] (DNS rebinding protection)", r.Host))
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !loopbackOrigin(o) {
			deny(w, http.StatusForbidden, fmt.Sprintf("Origin %q is not a loopback origin; browsers on other sites may not call this endpoint", o))
			return
		}
		auth := r.Header.Get("Authorization")
		got, ok := strings.CutPrefix(auth, "Bearer ")
		if auth == "" || !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="capabilities"`)
			deny(w, http.StatusUnauthorized, "missing bearer token: send Authorization: Bearer <token>, the token in $CAPABILITIES_HOME/hub/http-token")
			return
		}
		if subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="capabilities", error="invalid_token"`)
			deny(w, http.StatusUnauthorized, "wrong bearer token: use the token in $CAPABILITIES_HOME/hub/http-token")
			return
		}
		if r.URL.Path != "/mcp" && r.URL.Path != "/mcp/" {
			deny(w, http.StatusNotFound, "not found: the MCP endpoint is /mcp")
			return
		}
		if r.ContentLength > MaxBodyBytes {
			deny(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body of %d bytes is over the limit of %d", r.ContentLength, MaxBodyBytes))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		if modernRequest(r) {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
}

// modernRequest reports whether a request speaks protocol 2026-07-28 or
// later, which names its version in the MCP-Protocol-Version header on every
// request (versions are dates, so they compare as strings).
func modernRequest(r *http.Request) bool {
	return r.Header.Get("Mcp-Protocol-Version") >= modernProtocol
}

const modernProtocol = "2026-07-28"

func deny(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	fmt.Fprintln(w, msg)
}

// loopbackHost reports whether a Host header names this machine.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func loopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return loopbackHost(u.Host)
}
