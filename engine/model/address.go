package model

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Tool addresses
//
// A tool address is "namespace.tool". The namespace is lower-case ASCII
// letters, digits and '_', starting with a letter, at most 32 bytes (see
// ValidNamespace). The tool part is the upstream tool name normalized to a
// JavaScript identifier by ToolIdent:
//
//  1. Split the name into words at every character that is not an ASCII
//     letter or digit ("create_issue", "get-sum", "API-post-search",
//     "linear_getViewer", "name with spaces").
//  2. The first word is lower-cased if it is all upper-case ("API" → "api"),
//     otherwise only its first letter is lower-cased ("Create" → "create").
//  3. Every later word gets its first letter upper-cased, the rest kept
//     ("issue" → "Issue", "getViewer" → "GetViewer").
//  4. A result that starts with a digit gets a leading '_'; an empty result
//     (a name of only symbols) becomes "tool".
//
// So create_issue → createIssue, get-sum → getSum, API-post-search →
// apiPostSearch, linear_getViewer → linearGetViewer, 2fa_check → _2faCheck.
//
// Collisions: when two or more upstream names in one manifest normalize to
// the same identifier, a name that is already that identifier keeps it; every
// other colliding name gets the suffix "_" plus the first 4 hex digits of the
// SHA-256 of its upstream name (get_file → getFile_3f2a). The suffix depends
// only on the name, so it does not change when tools are reordered, added or
// removed elsewhere in the manifest. Should two colliding names share those 4
// digits, both take 8, then 16, and so on up to the whole digest: addresses are
// unique within a manifest, always. (No plain identifier contains '_' after
// its first character, so a suffixed one never equals a plain one.)

// ToolIdent normalizes an upstream tool name to a JavaScript identifier.
func ToolIdent(name string) string {
	words := strings.FieldsFunc(name, func(r rune) bool {
		return !(r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)))
	})
	var b strings.Builder
	for i, w := range words {
		if i == 0 {
			if strings.ToUpper(w) == w {
				b.WriteString(strings.ToLower(w))
			} else {
				b.WriteString(strings.ToLower(w[:1]) + w[1:])
			}
			continue
		}
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	id := b.String()
	if id == "" {
		return "tool"
	}
	if id[0] >= '0' && id[0] <= '9' {
		id = "_" + id
	}
	return id
}

// ToolIdents assigns an identifier to each upstream name of one manifest,
// applying the collision rule. The result maps upstream name → identifier.
// Duplicate upstream names map to one identifier.
func ToolIdents(names []string) map[string]string {
	byIdent := map[string][]string{}
	for _, n := range names {
		id := ToolIdent(n)
		if !contains(byIdent[id], n) {
			byIdent[id] = append(byIdent[id], n)
		}
	}
	out := make(map[string]string, len(names))
	for id, group := range byIdent {
		if len(group) == 1 {
			out[group[0]] = id
			continue
		}
		sort.Strings(group)
		var suffixed []string
		for _, n := range group {
			if n == id {
				out[n] = id
				continue
			}
			suffixed = append(suffixed, n)
		}
		for n, suffix := range uniqueSuffixes(suffixed) {
			out[n] = id + "_" + suffix
		}
	}
	return out
}

// uniqueSuffixes gives each name the shortest prefix of its SHA-256 hex
// digest, 4 digits or more, that no other of names shares at that length.
func uniqueSuffixes(names []string) map[string]string {
	sums := make(map[string]string, len(names))
	for _, n := range names {
		sum := sha256.Sum256([]byte(n))
		sums[n] = hex.EncodeToString(sum[:])
	}
	out := make(map[string]string, len(names))
	for _, n := range names {
		for k := 4; ; k *= 2 {
			if k >= len(sums[n]) {
				out[n] = sums[n]
				break
			}
			clash := false
			for _, m := range names {
				if m != n && sums[m][:k] == sums[n][:k] {
					clash = true
					break
				}
			}
			if !clash {
				out[n] = sums[n][:k]
				break
			}
		}
	}
	return out
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// MaxNamespaceLen is the longest namespace accepted.
const MaxNamespaceLen = 32

// ValidNamespace reports whether ns can be used as a namespace, and if not,
// why.
func ValidNamespace(ns string) error {
	if ns == "" {
		return fmt.Errorf("namespace is empty")
	}
	if len(ns) > MaxNamespaceLen {
		return fmt.Errorf("namespace %q is longer than %d characters", ns, MaxNamespaceLen)
	}
	if ns[0] < 'a' || ns[0] > 'z' {
		return fmt.Errorf("namespace %q must start with a lower-case letter a-z", ns)
	}
	for _, r := range ns {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return fmt.Errorf("namespace %q may contain only a-z, 0-9 and _ (found %q)", ns, r)
		}
	}
	if reservedNamespaces[ns] {
		return fmt.Errorf("namespace %q is reserved by the sandbox; pick another with --namespace", ns)
	}
	return nil
}

// reservedNamespaces are globals the guest prelude defines or JavaScript
// needs; a source cannot shadow them.
var reservedNamespaces = map[string]bool{
	"hub": true, "console": true, "crypto": true, "globalthis": true, "math": true,
	"json": true, "object": true, "array": true, "promise": true, "date": true,
	"undefined": true, "null": true, "true": true, "false": true, "this": true,
	"new": true, "delete": true, "typeof": true, "void": true, "function": true,
	"class": true, "return": true, "var": true, "let": true, "const": true,
	"if": true, "else": true, "for": true, "while": true, "do": true, "switch": true,
	"case": true, "default": true, "break": true, "continue": true, "try": true,
	"catch": true, "finally": true, "throw": true, "with": true, "in": true,
	"instanceof": true, "import": true, "export": true, "extends": true,
	"super": true, "yield": true, "await": true, "async": true, "static": true,
	"enum": true, "implements": true, "interface": true, "package": true,
	"private": true, "protected": true, "public": true, "debugger": true,
	"eval": true, "arguments": true, "settimeout": true, "cleartimeout": true,
	"structuredclone": true, "atob": true, "btoa": true, "std": true, "os": true,
}

// NewNamespace reports whether ns can be given to a new source: a valid
// namespace (ValidNamespace) that is not one of the runtime's own globals
// (ShadowsGlobal).
func NewNamespace(ns string) error {
	if err := ValidNamespace(ns); err != nil {
		return err
	}
	if ShadowsGlobal(ns) {
		return fmt.Errorf("namespace %q is a global of the sandbox's JavaScript, which code would reach instead of the source; pick another with --namespace", ns)
	}
	return nil
}

// ShadowsGlobal reports whether ns is a global of the sandbox's runtime that
// ValidNamespace lets through, because a hub may already have a source of
// that name: the guest keeps the global, so code cannot reach such a
// source (remove it and add it again with --namespace). New sources are not given
// these names (NewNamespace).
func ShadowsGlobal(ns string) bool {
	return ns == "escape" || ns == "unescape" || ns == "performance"
}

// SanitizeNamespace turns a server's name ("@acme/GitHub-MCP server") into a
// namespace candidate ("github"): it drops an npm scope, common suffixes such
// as "mcp", "server" and "secure", lower-cases, replaces other characters with '_' and
// trims to MaxNamespaceLen. It may return "" when nothing usable is left.
func SanitizeNamespace(name string) string {
	name = strings.ToLower(strings.TrimSpace(name))
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	words := strings.FieldsFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
	var kept []string
	for _, w := range words {
		switch w {
		case "mcp", "server", "servers", "modelcontextprotocol", "io", "secure", "example", "official":
			continue
		}
		kept = append(kept, w)
	}
	if len(kept) == 0 {
		kept = words
	}
	ns := strings.Join(kept, "_")
	ns = strings.TrimLeft(ns, "0123456789_")
	if len(ns) > MaxNamespaceLen {
		ns = strings.TrimRight(ns[:MaxNamespaceLen], "_")
	}
	return ns
}

// SplitAddress splits "namespace.tool" into its parts.
func SplitAddress(addr string) (ns, tool string, ok bool) {
	ns, tool, ok = strings.Cut(addr, ".")
	if !ok || ns == "" || tool == "" || strings.Contains(tool, ".") {
		return "", "", false
	}
	return ns, tool, true
}

// QuoteCommand renders argv as a POSIX shell command line, quoting only what
// needs quoting, so a person sees exactly what will run.
func QuoteCommand(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		parts[i] = shellQuote(a)
	}
	return strings.Join(parts, " ")
}

func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:@%+,", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
