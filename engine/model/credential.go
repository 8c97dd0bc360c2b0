package model

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// IsReference reports whether a config value refers to a value kept
// elsewhere (${VAR}, ${env:VAR}, VS Code's ${input:id}) rather than holding
// it: the harness fills it in when it starts the server.
func IsReference(v string) bool { return refPattern.MatchString(v) }

var refPattern = regexp.MustCompile(`\$\{[^}]+\}`)

// OnlyReference reports whether v is one reference and nothing else.
func OnlyReference(v string) bool { return v != "" && refPattern.FindString(v) == v }

// CredentialName reports whether a variable, header or flag name is one
// that holds a credential. The name is read as words (split at anything
// but a letter or a digit, and where a lower-case letter meets an upper-case
// one: apiKey is api, key):
//
//   - any word holding secret, password, passwd or passphrase
//     (CLIENT_SECRET, DB_PASSWORD, MYSQL_PASSWD);
//   - a word ending in key, keys, token or tokens (API_KEY, PRIVATE_KEY,
//     SIGNING_KEY, APIKEY, GITHUB_TOKEN, accessToken; not KEYBOARD_LAYOUT);
//   - the word credential, credentials or creds (GOOGLE_CREDENTIALS_JSON,
//     AWS_CREDENTIAL);
//   - the last word pat, dsn, cookie or cookies (GITHUB_PAT, SENTRY_DSN,
//     DSN, SESSION_COOKIE; not PATH, PATTERN, COMPATIBILITY);
//   - the last word pwd after another (MYSQL_PWD, DB_PWD; not PWD, the
//     shell's working directory);
//   - a connection string: connection or conn then string, strings or str
//     (CONNECTION_STRING, DB_CONN_STR, ConnectionStrings__Default), or
//     connectionstring, connstring, connstr;
//   - the header names Authorization and Proxy-Authorization.
func CredentialName(name string) bool {
	if strings.EqualFold(name, "authorization") || strings.EqualFold(name, "proxy-authorization") {
		return true
	}
	words := nameWords(name)
	for i, w := range words {
		last := i == len(words)-1
		switch {
		case strings.Contains(w, "secret"), strings.Contains(w, "password"), strings.Contains(w, "passwd"), strings.Contains(w, "passphrase"):
			return true
		case strings.HasSuffix(w, "key"), strings.HasSuffix(w, "keys"), strings.HasSuffix(w, "token"), strings.HasSuffix(w, "tokens"):
			return true
		case w == "credential", w == "credentials", w == "creds":
			return true
		case w == "connectionstring", w == "connstring", w == "connstr":
			return true
		case (w == "connection" || w == "conn") && !last && (words[i+1] == "string" || words[i+1] == "strings" || words[i+1] == "str"):
			return true
		case last && (w == "pat" || w == "dsn" || w == "cookie" || w == "cookies"):
			return true
		case last && i > 0 && w == "pwd":
			return true
		}
	}
	return false
}

// nameWords splits a name into lower-case words: at every character that
// is not a letter or a digit, and where a lower-case letter or a digit is
// followed by an upper-case letter.
func nameWords(name string) []string {
	var words []string
	var w []rune
	prev := rune(0)
	for _, r := range name {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			if len(w) > 0 {
				words = append(words, string(w))
			}
			w, prev = w[:0], 0
			continue
		case unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev)) && len(w) > 0:
			words = append(words, string(w))
			w = w[:0]
		}
		w = append(w, unicode.ToLower(r))
		prev = r
	}
	if len(w) > 0 {
		words = append(words, string(w))
	}
	return words
}

// shape matches values shaped like well-known credentials whatever their
// variable is called.
var shape = regexp.MustCompile(`^(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|sk-[A-Za-z0-9_-]{16,}|xox[bpas]-[A-Za-z0-9-]{10,}|eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*|(?i:bearer)\s+\S+)$`)

// notCredential matches values that a credential's name may hold without
// being one: a number (MAX_TOKENS=4096), a switch (USE_API_KEY=true), a
// path (SSH_KEY_PATH=~/.ssh/id). A path is relative to home or to here, or
// under a well-known root: a base64 token may begin with "/" too; or it is
// a file name with the extension of a key, certificate or settings file
// (GOOGLE_APPLICATION_CREDENTIALS=service-account.json).
var notCredential = regexp.MustCompile(`(?i)^([+-]?[0-9]+(\.[0-9]+)?|true|false|yes|no|on|off|(~|\.{1,2})/.*|/(home|users|etc|var|tmp|opt|usr|root|run|mnt|srv|private|volumes)/.*|[\w.-]+\.(json|pem|key|p12|pfx|crt|cer|der|jks|keystore|ya?ml|toml|ini|conf|cfg|txt))$`)

// minSecretLen is the scrubber's floor (scrub.MinLen, which model cannot
// import): a shorter value is never scrubbed.
const minSecretLen = 4

// urlUserinfo matches a URL's scheme and userinfo: the authority runs to
// the first "/", "?", "#" or space, and the userinfo to its last "@" (a
// password may hold an "@" its writer did not encode).
var urlUserinfo = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://([^/?#\s]*)@`)

// semicolonPair is a key=value pair of a connection string whose pairs are
// separated by ";" (ADO.NET, ODBC, JDBC: Server=db;User Id=sa;Password=x;):
// a value is quoted ("…" or '…', the quote doubled inside), in braces
// (ODBC's {…}, "}}" inside) or runs to the next ";".
var semicolonPair = regexp.MustCompile(`(?:^|;)\s*([^;=]+?)\s*=\s*("(?:[^"]|"")*"|'(?:[^']|'')*'|\{(?:[^}]|\}\})*\}|[^;]*)`)

// spacePair is a key=value pair of a DSN or query without ";" (libpq's
// host=db password=x, a URL's ?user=u&password=x, a flag --password=x): a
// value is quoted (a backslash escapes inside) or runs to the next space,
// "&" or ",".
var spacePair = regexp.MustCompile(`(?:^|[\s&?,])-*([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^\s&,]*)`)

// embedded is a password written inside a larger value.
type embedded struct {
	raw   string // as the value holds it
	plain string // unquoted and percent-decoded: what the server uses
}

// passwords returns the passwords v holds inside it: the password of each
// URL with one in its userinfo (postgres://user:password@host/db), the
// value of each password, passwd, pwd or passphrase key of a connection
// string, DSN or query (Server=db;Password=x; host=db password=x
// ?password=x), and of each query parameter of a URL named like a
// credential (?token=x, &api_key=x). A password that is only a reference (${DB_PASSWORD}) is
// not one.
func passwords(v string) []embedded {
	var out []embedded
	semicolon := strings.Contains(v, ";")
	add := func(raw, plain string, decode bool) {
		if raw == "" || plain == "" || IsReference(plain) {
			return
		}
		if p, err := url.PathUnescape(plain); err == nil && decode {
			plain = p
		}
		out = append(out, embedded{raw, plain})
	}
	for _, m := range urlUserinfo.FindAllStringSubmatch(v, -1) {
		if _, pw, ok := strings.Cut(m[1], ":"); ok {
			add(pw, pw, true)
		}
	}
	pair := spacePair
	if semicolon {
		pair = semicolonPair
	}
	for _, m := range pair.FindAllStringSubmatch(v, -1) {
		if passwordKey(m[1]) {
			raw, plain := unquoted(m[2], semicolon)
			add(raw, plain, !semicolon) // a query's value is percent-encoded
		}
	}
	for _, q := range queryCredentials(v) {
		add(q.raw, q.plain, false)
	}
	return out
}

// passwordKey reports whether a connection string's key names its
// password (Password, PWD, db_password, ssl passphrase).
func passwordKey(k string) bool {
	k = strings.ToLower(strings.TrimSpace(k))
	return k == "pwd" || strings.Contains(k, "password") || strings.Contains(k, "passwd") || strings.Contains(k, "passphrase")
}

// unquoted returns a pair's value as written, without its quotes or braces
// (raw), and with its escapes undone (plain): a doubled quote or brace in a
// connection string whose pairs are separated by ";" (semicolon), a
// backslash in a DSN's.
func unquoted(v string, semicolon bool) (raw, plain string) {
	if len(v) < 2 {
		return v, v
	}
	q, end := v[0], v[len(v)-1]
	switch {
	case semicolon && q == '{' && end == '}':
		raw = v[1 : len(v)-1]
		return raw, strings.ReplaceAll(raw, "}}", "}")
	case semicolon && (q == '"' || q == '\'') && end == q:
		raw = v[1 : len(v)-1]
		return raw, strings.ReplaceAll(raw, string([]byte{q, q}), string(q))
	case !semicolon && (q == '"' || q == '\'') && end == q:
		raw = v[1 : len(v)-1]
		var b strings.Builder
		for i := 0; i < len(raw); i++ {
			if raw[i] == '\\' && i+1 < len(raw) {
				i++
			}
			b.WriteByte(raw[i])
		}
		return raw, b.String()
	}
	return v, v
}

// alone reports whether p, a password found inside the value v, can be
// scrubbed on its own: it is at least the scrubber's minimum length, not a
// number or a switch (the rule for a credential's value), not a word
// (letters of one case, or capitalized, shorter than 16: password,
// postgres, changeme, Admin), and written nowhere else in v (as the user,
// host or database: postgres://postgres:postgres@postgres/postgres).
// Scrubbing such a password alone would blot out ordinary text and the
// parts of the value the model may see.
func (p embedded) alone(v string) bool {
	if len(p.plain) < minSecretLen || notCredential.MatchString(p.plain) || strings.Count(v, p.raw) > 1 {
		return false
	}
	return !wordLike(p.plain)
}

func wordLike(s string) bool {
	if len(s) >= 16 {
		return false
	}
	for _, r := range s {
		if !unicode.IsLetter(r) {
			return false
		}
	}
	first, n := utf8.DecodeRuneInString(s)
	rest := s[n:]
	lower := strings.ToLower(rest)
	return rest == lower && (unicode.IsLower(first) || unicode.IsUpper(first)) || s == strings.ToUpper(s)
}

// secrets returns what the scrubber must learn of the trimmed value v: v
// itself when it is a credential as a whole (whole), each password v holds
// that can be scrubbed on its own (as written and as the server reads it),
// and v when one cannot (weak): the model then sees [secret] for the whole
// value, but not for that password written alone. A value holding more
// than maxPasswords passwords is not a config's: it is scrubbed whole.
func secrets(v string, whole bool) (out []string, weak bool) {
	if whole {
		out = append(out, v)
	}
	ps := passwords(v)
	if len(ps) > maxPasswords {
		ps, weak = nil, true
	}
	for _, p := range ps {
		if !p.alone(v) {
			weak = true
			continue
		}
		out = appendNew(out, p.raw)
		out = appendNew(out, p.plain)
	}
	if weak {
		out = appendNew(out, v)
	}
	return out, weak
}

const maxPasswords = 16

func appendNew(out []string, v string) []string {
	if slices.Contains(out, v) {
		return out
	}
	return append(out, v)
}

// PlainCredential reports whether the value of the variable or header name
// is, or holds, a credential written in plain text: a value shaped like a
// well-known token, the value of a credential's name (CredentialName) that
// is not a number, a switch, a path, or a word when the name says what sort
// of credential is meant (TOKEN_TYPE=bearer), or a value that holds a password (a
// URL's postgres://user:password@host, a connection string's Password=).
func PlainCredential(name, value string) bool {
	out, _ := PlainSecrets(name, value)
	return len(out) > 0
}

// PlainSecrets returns what the scrubber must learn of the value of the
// variable, header or flag name when it is a plain-text credential (nil
// when it is not one): the whole value when the value is a credential (its
// name or shape says so), and each password the value holds (a URL's
// userinfo, a connection string's Password=) on its own, so that the model
// still sees the rest (the host). weak is true when one of those passwords
// is too short or too common to be scrubbed on its own: the whole value is
// scrubbed instead, and the password written alone reaches the model.
func PlainSecrets(name, value string) (out []string, weak bool) {
	v := strings.TrimSpace(value)
	if v == "" {
		return nil, false
	}
	// A word as the value of a name that says what sort of credential is
	// meant (TOKEN_TYPE=bearer, --key-format PEM) is none, as in a query.
	named := CredentialName(name) && !notCredential.MatchString(v) && !(describesCredential(name) && wordLike(v))
	whole := !IsReference(v) && (shape.MatchString(v) || named)
	return secrets(v, whole)
}

// Secrets returns what the scrubber must learn of a credential's value v
// (a connection's, from the secret store): v, and each password it holds
// that can be scrubbed on its own (a DATABASE_URL moved into the secret
// store, which its server may print without the rest of the URL).
func Secrets(v string) []string {
	out, _ := secrets(v, true)
	return out
}

// CredentialArg is an argument of a command that holds a credential in
// plain text.
type CredentialArg struct {
	Index int    // in the arguments
	Flag  string // the flag naming it (--api-key), "" for none
	// Secrets and Weak are what PlainSecrets says of its value.
	Secrets []string
	Weak    bool
}

// CredentialArgs returns the arguments (a command's, without the program)
// that hold a credential in plain text: the value of a flag named like a
// credential (--api-key X, --token=X) that is not a number, a switch or a
// path, a value shaped like a well-known token, or a value that holds a
// password (--url postgres://user:password@host/db).
func CredentialArgs(args []string) []CredentialArg {
	var out []CredentialArg
	for i, a := range args {
		flag, name, value := "", "", a
		if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(k, "-") {
			flag, name, value = k, strings.TrimLeft(k, "-"), v
		} else if i > 0 && strings.HasPrefix(args[i-1], "-") && !strings.Contains(args[i-1], "=") && !strings.HasPrefix(a, "-") {
			flag, name = args[i-1], strings.TrimLeft(args[i-1], "-")
		}
		if s, weak := PlainSecrets(name, value); len(s) > 0 {
			out = append(out, CredentialArg{Index: i, Flag: flag, Secrets: s, Weak: weak})
		}
	}
	return out
}

// PlainCredentials returns what the scrubber must learn of the credentials
// written in plain text in the source's environment, headers and arguments
// (a person's `--env NAME=value` beside the one credential the secret store
// keeps, a DATABASE_URL's password): PlainSecrets of each.
func (s *Source) PlainCredentials() []string {
	var out []string
	for _, m := range []map[string]string{s.Env, s.Headers} {
		for k, v := range m {
			p, _ := PlainSecrets(k, v)
			out = append(out, p...)
		}
	}
	for _, a := range CredentialArgs(s.Args) {
		out = append(out, a.Secrets...)
	}
	// A remote server's URL with a password (imported from an agent's
	// config; hub add refuses one): the password, and user:password, which
	// the server gets as HTTP Basic (its base64 form is scrubbed with it).
	if u, err := url.Parse(s.URL); s.URL != "" && err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			p, _ := PlainSecrets("URL", s.URL)
			out = append(out, p...)
			out = append(out, u.User.Username()+":"+pw)
		}
	}
	return out
}

// Mask stands for a credential's value in what a person is shown.
const Mask = "****"

// urlQuery is a URL's query: what follows its "?" up to a "#" or a space.
var urlQuery = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s?#]*\?([^\s#]*)`)

// queryCredentials returns the values of the query parameters named like a
// credential (?token=…, &api_key=…, ?access_token=…) of each URL v holds,
// as written and percent-decoded; a number, a switch, a path or a
// reference is none, and so is a word (wordLike) as the value of a name
// that says what sort of credential is meant (describesCredential:
// ?token_type=bearer): scrubbed on its own it would blot out the word
// everywhere, and scrubbed whole it hid the URL. Those named like a
// password are passwords' already.
func queryCredentials(v string) []embedded {
	var out []embedded
	for _, m := range urlQuery.FindAllStringSubmatch(v, -1) {
		for _, pair := range strings.Split(m[1], "&") {
			k, raw, ok := strings.Cut(pair, "=")
			if !ok || raw == "" || passwordKey(k) || !CredentialName(k) {
				continue
			}
			plain := raw
			if p, err := url.QueryUnescape(raw); err == nil {
				plain = p
			}
			if IsReference(plain) || notCredential.MatchString(plain) || (describesCredential(k) && wordLike(plain)) {
				continue
			}
			out = append(out, embedded{raw, plain})
		}
	}
	return out
}

// credentialDescriptors are the last words of a name that says what sort
// of credential is meant rather than holding one (token_type, key_kind,
// token_type_hint, auth_key_format).
var credentialDescriptors = []string{"type", "kind", "format", "hint", "method", "scheme"}

// describesCredential reports whether a parameter's name, named like a
// credential, ends in a word that describes one (credentialDescriptors).
func describesCredential(name string) bool {
	words := nameWords(name)
	return len(words) > 1 && slices.Contains(credentialDescriptors, words[len(words)-1])
}

// Redact shows a value with each credential PlainSecrets finds in it
// (name is its variable, header or flag, "" for none) replaced by Mask:
// the whole value when it is a credential, else each password or token it
// holds (postgres://u:****@db, ?token=****), so that the rest still says
// what it is.
func Redact(name, value string) string {
	s, _ := PlainSecrets(name, value)
	return redact(value, s)
}

func redact(v string, secrets []string) string {
	if len(secrets) == 0 {
		return v
	}
	// The longest first: a password may be part of the whole value.
	s := slices.Clone(secrets)
	slices.SortFunc(s, func(a, b string) int { return len(b) - len(a) })
	for _, x := range s {
		if x != "" {
			v = strings.ReplaceAll(v, x, Mask)
		}
	}
	return v
}

// RedactArgs returns a command's arguments (without the program) as a
// person is shown them: each one CredentialArgs finds holding a credential
// has it replaced by Mask (--token ****, --api-key=****,
// --url https://h/mcp?token=****). The source keeps the real values to run.
func RedactArgs(args []string) []string {
	out := slices.Clone(args)
	for _, a := range CredentialArgs(args) {
		v := out[a.Index]
		if a.Flag != "" && strings.HasPrefix(v, a.Flag+"=") {
			out[a.Index] = a.Flag + "=" + redact(strings.TrimPrefix(v, a.Flag+"="), a.Secrets)
			continue
		}
		out[a.Index] = redact(v, a.Secrets)
	}
	return out
}

// ShownCommandLine is CommandLine as a person is shown it, in a listing:
// the credentials of its arguments masked (RedactArgs).
func (s *Source) ShownCommandLine() string {
	if s.Kind != KindStdio {
		return ""
	}
	return QuoteCommand(append([]string{s.Command}, RedactArgs(s.Args)...))
}

// ShownURL is the source's URL as a person is shown it: a password in it,
// and a credential in its query, masked.
func (s *Source) ShownURL() string { return Redact("URL", s.URL) }

// ShownCommand is a command line QuoteCommand wrote as a person is shown
// it: its arguments' credentials masked (RedactArgs). The line is read
// back as a POSIX shell reads QuoteCommand's quoting.
func ShownCommand(line string) string {
	var argv []string
	var cur strings.Builder
	in, quoted := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quoted && c == '\'':
			quoted = false
		case quoted:
			cur.WriteByte(c)
		case c == '\'':
			quoted, in = true, true
		case c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			in = true
		case c == ' ':
			if in {
				argv = append(argv, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		argv = append(argv, cur.String())
	}
	if len(argv) == 0 {
		return line
	}
	return QuoteCommand(append(argv[:1:1], RedactArgs(argv[1:])...))
}
