package model

import (
	"regexp"
	"strings"
)

// IsReference reports whether a config value refers to a value kept
// elsewhere (${VAR}, ${env:VAR}, VS Code's ${input:id}) rather than holding
// it: the harness fills it in when it starts the server.
func IsReference(v string) bool { return refPattern.MatchString(v) }

var refPattern = regexp.MustCompile(`\$\{[^}]+\}`)

// OnlyReference reports whether v is one reference and nothing else.
func OnlyReference(v string) bool { return v != "" && refPattern.FindString(v) == v }

// CredentialName reports whether a variable or header name is one that
// holds a credential (…TOKEN, …KEY, …SECRET, …PASSWORD, Authorization).
func CredentialName(name string) bool { return namePattern.MatchString(name) }

var namePattern = regexp.MustCompile(`(?i)token|key|secret|passw(or)?d|^authorization$|^proxy-authorization$`)

// shape matches values shaped like well-known credentials whatever their
// variable is called.
var shape = regexp.MustCompile(`^(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|sk-[A-Za-z0-9_-]{16,}|xox[bpas]-[A-Za-z0-9-]{10,}|eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*|(?i:bearer)\s+\S+)$`)

// notCredential matches values that a credential's name may hold without
// being one: a number (MAX_TOKENS=4096), a switch (USE_API_KEY=true), a
// path (SSH_KEY_PATH=~/.ssh/id). A path is relative to home or to here, or
// under a well-known root: a base64 token may begin with "/" too.
var notCredential = regexp.MustCompile(`(?i)^([+-]?[0-9]+(\.[0-9]+)?|true|false|yes|no|on|off|(~|\.{1,2})/.*|/(home|users|etc|var|tmp|opt|usr|root|run|mnt|srv|private|volumes)/.*)$`)

// PlainCredential reports whether the value of the variable or header name
// is a credential written in plain text.
func PlainCredential(name, value string) bool {
	value = strings.TrimSpace(value)
	if value == "" || IsReference(value) {
		return false
	}
	if shape.MatchString(value) {
		return true
	}
	return CredentialName(name) && !notCredential.MatchString(value)
}

// PlainCredentials returns the values of the source's environment and
// headers that are credentials written in plain text (a person's `--env
// NAME=value` beside the one credential the secret store keeps).
func (s *Source) PlainCredentials() []string {
	var out []string
	for _, m := range []map[string]string{s.Env, s.Headers} {
		for k, v := range m {
			if PlainCredential(k, v) {
				out = append(out, strings.TrimSpace(v))
			}
		}
	}
	return out
}
