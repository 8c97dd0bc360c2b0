package cli

import (
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/harness"
	"github.com/google/go-cmp/cmp"
)

func TestRemoteHub(t *testing.T) {
	tests := []struct {
		raw, base, host, ref string
		err                  string // a part of the error; "" for none
	}{
		{raw: "https://hub.example.com", base: "https://hub.example.com", host: "hub.example.com", ref: "hub-token/hub.example.com"},
		{raw: "https://Hub.Example.com:8443/mcp/", base: "https://hub.example.com:8443", host: "hub.example.com:8443", ref: "hub-token/hub.example.com_8443"},
		{raw: "http://127.0.0.1:4790/mcp", base: "http://127.0.0.1:4790", host: "127.0.0.1:4790", ref: "hub-token/127.0.0.1_4790"},
		{raw: "http://localhost:4790", base: "http://localhost:4790", host: "localhost:4790", ref: "hub-token/localhost_4790"},
		{raw: "http://[::1]:4790", base: "http://[::1]:4790", host: "[::1]:4790", ref: "hub-token/__1_4790"},
		{raw: "http://hub.example.com", err: "plain http to hub.example.com would send the hub's bearer token in clear"},
		{raw: "http://10.0.0.5:4790", err: "plain http to 10.0.0.5"},
		{raw: "", err: "empty"},
		{raw: "hub.example.com", err: "not an http(s) URL with a host"},
		{raw: "ftp://hub.example.com", err: "not an http(s) URL with a host"},
		{raw: "https://u:p@hub.example.com", err: "a URL with a user or password is refused"},
		{raw: "https://hub.example.com/?x=1", err: "drop the query and fragment"},
		{raw: "https://hub.example.com/other", err: `the path "/other" is not the hub's`},
	}
	for _, tt := range tests {
		base, host, err := remoteHub("--hub", tt.raw)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("remoteHub(%q) = %v, %q, %v; want an error with %q", tt.raw, base, host, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("remoteHub(%q): %v", tt.raw, err)
			continue
		}
		got := []string{base.String(), host, hubTokenRef(host), hubEndpoint(base, "default"), hubEndpoint(base, "work")}
		want := []string{tt.base, tt.host, tt.ref, tt.base + "/mcp", tt.base + "/mcp/work"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("remoteHub(%q) (-want +got):\n%s", tt.raw, diff)
		}
	}
}

// TestRemoteEntryIsOurs: the entry connect --hub writes is connect's own
// (updated by connect, taken out by disconnect); one that carries anything
// more is the person's.
func TestRemoteEntryIsOurs(t *testing.T) {
	tests := []struct {
		args []string
		want bool
	}{
		{entryArgs("default", "https://hub.example.com"), true},
		{entryArgs("work", "https://hub.example.com"), true},
		{[]string{"hub", "serve", "--stdio", "--hub", "https://hub.example.com"}, true},
		{[]string{"hub", "serve", "--stdio", "--hub"}, false},
		{[]string{"hub", "serve", "--stdio", "--hub", ""}, false},
		{[]string{"hub", "serve", "--stdio", "--hub", "https://a", "--verbose"}, false},
	}
	for _, tt := range tests {
		s := harness.Server{Kind: harness.KindStdio, Command: "/usr/local/bin/capabilities", Args: tt.args}
		if got := isHubEntry(s, nil); got != tt.want {
			t.Errorf("isHubEntry(args %q) = %v, want %v", tt.args, got, tt.want)
		}
	}
}
