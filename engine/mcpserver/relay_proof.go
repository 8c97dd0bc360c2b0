package mcpserver

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

// The stdio shim finds the hub through hub/endpoint.json, which any process
// of this user can write: a hub killed -9 leaves its announcement behind,
// and whatever listens at the address it names (or at one written there on
// purpose) would be sent the bearer token. So before a request carrying the
// token goes over a connection, the listener proves on that connection that
// it holds the token already: the shim sends a fresh challenge, without the
// token, and the hub answers with an HMAC of it, keyed with the token and
// bound to the address it accepted the connection on. A listener that does
// not hold the token cannot answer; one that passes the challenge on to the
// real hub (a relay at another port) gets an answer bound to the hub's
// address, not its own. Sending the token to a listener that proves it holds
// it tells that listener nothing.

// ProofPath is where the hub answers the shim's challenge (GET
// ProofPath?challenge=<hex>): {"pid": N, "proof": "<hex>"}. It needs no
// token, and gives nothing a caller could use: the proof is bound to the
// caller's challenge and to the hub's own address.
const ProofPath = "/proof"

// proofTimeout bounds the wait for a listener's proof: a hub answers it from
// its HTTP server alone, before any admission queue, even when busy.
const proofTimeout = 10 * time.Second

// errNotTheHub is the cause of a connection given up on because what
// listens there did not prove it holds the hub's token.
var errNotTheHub = errors.New("what listens there does not prove it is this hub (it does not hold hub/http-token): the token is not sent to it")

// hubProof is the hub's answer to challenge on a connection accepted at addr.
func hubProof(token, challenge, addr string) string {
	m := hmac.New(sha256.New, []byte(token))
	fmt.Fprintf(m, "capabilities hub proof 1\n%s\n%s", challenge, addr)
	return hex.EncodeToString(m.Sum(nil))
}

// proveHub answers ProofPath with a proof keyed with token() and passes
// every other request to next.
func proveHub(token func() string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != ProofPath {
			next.ServeHTTP(w, r)
			return
		}
		ch := r.URL.Query().Get("challenge")
		local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		switch {
		case r.Method != http.MethodGet:
			deny(w, http.StatusMethodNotAllowed, "method not allowed: "+ProofPath+" answers GET")
		case !loopbackHost(r.Host) || r.Header.Get("Origin") != "":
			deny(w, http.StatusForbidden, "the hub's proof is for its stdio shim on this machine only")
		case len(ch) < 32 || len(ch) > 128 || !isHex(ch) || local == nil:
			deny(w, http.StatusBadRequest, "pass a challenge of 32 to 128 hex digits: "+ProofPath+"?challenge=<hex>")
		default:
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "no-store")
			_ = json.NewEncoder(w).Encode(map[string]any{"pid": os.Getpid(), "proof": hubProof(token(), ch, local.String())})
		}
	})
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
}

// proveConn asks the listener at the other end of c, a connection just made
// to host, to prove that it holds the hub's token, and returns the token
// the proof was made with: token(), or, when it does not match, the one
// reread() returns (a hub restarted with a new token). Nothing is sent on c
// before it proves; it is left ready for HTTP requests.
func proveConn(ctx context.Context, c net.Conn, host string, token func() string, reread func() string) (string, error) {
	challenge := make([]byte, 32)
	_, _ = rand.Read(challenge)
	ch := hex.EncodeToString(challenge)
	deadline := time.Now().Add(proofTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = c.SetDeadline(deadline)
	defer c.SetDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	req, err := http.NewRequest(http.MethodGet, "http://"+host+ProofPath+"?challenge="+ch, nil)
	if err != nil {
		return "", fmt.Errorf("asking for the hub's proof: %w", err)
	}
	req.Header.Set("User-Agent", "capabilities-shim")
	// A listener that hangs up or answers something else than HTTP is not
	// the hub; one that says nothing may be a hub that is stopped.
	failed := func(err error) error {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return fmt.Errorf("waiting for the proof of %s: %w", host, err)
		}
		return fmt.Errorf("asking %s for its proof: %v: %w", host, err, errNotTheHub)
	}
	if err := req.Write(c); err != nil {
		return "", failed(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return "", failed(err)
	}
	var got struct {
		Proof string `json:"proof"`
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	if err != nil {
		return "", failed(err)
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &got) != nil || br.Buffered() > 0 {
		return "", fmt.Errorf("asking %s for its proof (HTTP %d): %w", host, resp.StatusCode, errNotTheHub)
	}
	addr := c.RemoteAddr().String()
	tok := token()
	if hmac.Equal([]byte(got.Proof), []byte(hubProof(tok, ch, addr))) {
		return tok, nil
	}
	if reread != nil {
		if again := reread(); again != "" && again != tok && hmac.Equal([]byte(got.Proof), []byte(hubProof(again, ch, addr))) {
			return again, nil
		}
	}
	return "", fmt.Errorf("checking the proof of %s: %w", host, errNotTheHub)
}
