package model

import (
	"net/url"
	"strings"
)

// Origin is u's scheme://host:port, lower-cased, with the default port
// written out, so two spellings of one origin compare equal. It is the one
// definition of "the same origin" the hub's origin rules (I4: reviewed
// hosts, tokens, $refs, redirects) compare with.
func Origin(u *url.URL) string {
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return strings.ToLower(u.Scheme) + "://" + host + ":" + port
}
