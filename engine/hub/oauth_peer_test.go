package hub_test

import (
	"context"
	"net/url"
	"os/exec"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/oauth"
	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// The sign-in's loopback listener takes the redirect only from this user's
// processes (where the owner is known). The authorization URL, its state
// and code challenge included, is on the browser's command line, which
// every user of the machine reads with ps: another user could answer the
// listener first, with an error that ends the sign-in or with a code of
// their own account made for the same challenge, and the hub would store
// tokens to the other user's account. (Needs root to run as nobody.)
func TestSignInListensOnlyToThisUser(t *testing.T) {
	runuser := testenv.RunUser(t)
	srv := startOAuthServer(t)
	ctx := context.Background()
	open := func(u string) error {
		a, err := url.Parse(u)
		if err != nil {
			return err
		}
		q := a.Query()
		cb, err := url.Parse(q.Get("redirect_uri"))
		if err != nil {
			return err
		}
		cb.RawQuery = url.Values{"state": {q.Get("state")}, "error": {"access_denied"}}.Encode()
		other := exec.Command(runuser, "-u", "nobody", "--", testenv.Node(t), "-e", `fetch(process.argv[1]).then(r => console.log(r.status), e => console.log(String(e)))`, cb.String())
		out, _ := other.CombinedOutput()
		t.Logf("the other user's answer to the listener: %s", out)
		return followRedirects(u)
	}
	if _, err := oauth.SignIn(ctx, oauth.Options{ServerURL: srv.MCP, ClientID: "peer", Open: open}); err != nil {
		t.Fatalf("signing in, with another user answering the listener first: %v", err)
	}
}
