package model

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/scrub"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestCredentialName(t *testing.T) {
	credentials := []string{
		"GITHUB_TOKEN", "OPENAI_API_KEY", "APIKEY", "apiKey", "X-Api-Key", "accessToken", "MAX_TOKENS",
		"CLIENT_SECRET", "client_secret", "SESSION_SECRET", "DB_PASSWORD", "MYSQL_PASSWD", "PASSWD", "SSL_PASSPHRASE",
		"PRIVATE_KEY", "SSH_PRIVATE_KEY", "JWT_SIGNING_KEY", "API_KEYS",
		"GITHUB_PAT", "GH_PAT", "githubPat", "PAT",
		"GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CREDENTIALS_JSON", "AWS_CREDENTIAL", "CREDENTIALS",
		"MYSQL_PWD", "DB_PWD",
		"DSN", "SENTRY_DSN", "database_dsn",
		"CONNECTION_STRING", "DB_CONNECTION_STRING", "DB_CONN_STR", "ConnectionStrings__Default", "CONNSTR", "connectionString",
		"SESSION_COOKIE", "Cookie", "COOKIES",
		"Authorization", "proxy-authorization",
	}
	ordinary := []string{
		"PATH", "PATTERN", "COMPATIBILITY", "PASSTHROUGH", "KEYBOARD_LAYOUT", "DEBUG", "PWD", "OLDPWD",
		"DATABASE_URL", "REDIS_URL", "MONGODB_URI", "HOME", "SLACK_TEAM_ID", "MEMORY_FILE_PATH",
		"TOKENIZER", "KEYCLOAK_URL", "PAT_EXPIRY", "DSN_TIMEOUT", "COOKIE_DOMAIN", "CONNECTION_TIMEOUT",
		"X-Region", "Content-Type", "",
	}
	var got []string
	for _, n := range append(credentials, ordinary...) {
		if CredentialName(n) {
			got = append(got, n)
		}
	}
	if diff := cmp.Diff(credentials, got); diff != "" {
		t.Errorf("the credential names (-want +got):\n%s", diff)
	}
}

func TestPlainSecrets(t *testing.T) {
	type result struct {
		Secrets []string
		Weak    bool
	}
	tests := []struct {
		name, value string
		want        result
	}{
		// A password in a URL: the password alone, so the host stays.
		{"DATABASE_URL", "postgres://app:Hunter2SuperSecretPw@db.internal/prod", result{[]string{"Hunter2SuperSecretPw"}, false}},
		{"REDIS_URL", "redis://:s3cretRedisPw@cache:6379/0", result{[]string{"s3cretRedisPw"}, false}},
		{"MONGODB_URI", "mongodb+srv://admin:Mongo-Pa55word@cluster0.example.net/app?retryWrites=true", result{[]string{"Mongo-Pa55word"}, false}},
		{"AMQP_URL", " amqp://guest:R4bbit!pw@mq:5672/ ", result{[]string{"R4bbit!pw"}, false}},
		{"DATABASE_URL", "postgres://app:p%40ss%2Fw0rd@db/prod", result{[]string{"p%40ss%2Fw0rd", "p@ss/w0rd"}, false}},
		{"DATABASE_URL", "postgres://app:unencoded@at9@db/prod", result{[]string{"unencoded@at9"}, false}},
		{"DATABASE_URL", "postgresql://app:Hunter2x@h1:5432,h2:5432/prod", result{[]string{"Hunter2x"}, false}},
		{"UPSTREAMS", "redis://:Redis0ne1@a,redis://:Redis2wo2@b", result{[]string{"Redis0ne1", "Redis2wo2"}, false}},
		{"DATABASE_URL", "postgres://app:Hunter2x@${DB_HOST}/prod", result{[]string{"Hunter2x"}, false}},
		// … too short or too common to scrub on its own: the whole value.
		{"DATABASE_URL", "postgres://app:pw@db.internal/prod", result{[]string{"postgres://app:pw@db.internal/prod"}, true}},
		{"DATABASE_URL", "postgres://app:password@db.internal/prod", result{[]string{"postgres://app:password@db.internal/prod"}, true}},
		{"DATABASE_URL", "postgres://postgres:postgres@localhost/postgres", result{[]string{"postgres://postgres:postgres@localhost/postgres"}, true}},
		{"DATABASE_URL", "mysql://root:12345678@localhost/app", result{[]string{"mysql://root:12345678@localhost/app"}, true}},
		{"DATABASE_URL", "postgres://app:Admin@db/prod", result{[]string{"postgres://app:Admin@db/prod"}, true}},
		// … a named credential's value stays whole, its password too.
		{"DB_CONNECTION_STRING", "postgres://app:Hunter2x@db/prod", result{[]string{"postgres://app:Hunter2x@db/prod", "Hunter2x"}, false}},
		// Connection strings and DSNs: the value of Password=, pwd=.
		{"ConnectionStrings__Default", "Server=tcp:db,1433;Database=app;User Id=sa;Password=Hunter2!x;", result{[]string{"Server=tcp:db,1433;Database=app;User Id=sa;Password=Hunter2!x;", "Hunter2!x"}, false}},
		{"SQL", "Server=db;Database=app;User Id=sa;Password=my long pass;Encrypt=true", result{[]string{"my long pass"}, false}},
		{"SQL", `Server=db;Password="semi;colon""q";`, result{[]string{`semi;colon""q`, `semi;colon"q`}, false}},
		{"ODBC", "Driver={ODBC Driver 18};Server=db;UID=sa;PWD={br4ce;d}}x};", result{[]string{"br4ce;d}}x", "br4ce;d}x"}, false}},
		{"JDBC", "jdbc:sqlserver://db:1433;databaseName=app;user=sa;password=Jdbc5ecret;", result{[]string{"Jdbc5ecret"}, false}},
		{"PG", "host=db port=5432 dbname=app user=app password=L1bpqSecret sslmode=require", result{[]string{"L1bpqSecret"}, false}},
		{"PG", `host=db password='with sp4ce \' q'`, result{[]string{`with sp4ce \' q`, `with sp4ce ' q`}, false}},
		{"JDBC", "jdbc:mysql://db/app?user=app&password=Qu3ry%2Bpw&ssl=true", result{[]string{"Qu3ry%2Bpw", "Qu3ry+pw"}, false}},
		{"ARGS", "--verbose --db-password=Fl4gSecret", result{[]string{"Fl4gSecret"}, false}},
		{"PG", "host=db user=app password=app", result{[]string{"host=db user=app password=app"}, true}},
		// Names: *_PAT and the other shapes.
		{"GITHUB_PAT", "abcdEFGHijklMNOPqrst1234", result{[]string{"abcdEFGHijklMNOPqrst1234"}, false}},
		{"GOOGLE_CREDENTIALS_JSON", `{"type":"service_account"}`, result{[]string{`{"type":"service_account"}`}, false}},
		{"MYSQL_PWD", "Hunter2", result{[]string{"Hunter2"}, false}},
		{"SENTRY_DSN", "https://0123abcd@o1.ingest.sentry.io/42", result{[]string{"https://0123abcd@o1.ingest.sentry.io/42"}, false}},
		{"SESSION_COOKIE", "sid=s%3Aabc.def", result{[]string{"sid=s%3Aabc.def"}, false}},
		{"JWT_SIGNING_KEY", "k3y", result{[]string{"k3y"}, false}},
		// A URL's query parameter named like a credential: its value alone,
		// or the whole URL when the value is too common to scrub alone…
		{"URL", "https://h.example.test/mcp?access_token=Zq81xTyLw02pKd&token_type=bearer", result{[]string{"Zq81xTyLw02pKd"}, false}},
		{"URL", "https://h.example.test/mcp?token_type=Zq81xTyLw02pKd", result{[]string{"Zq81xTyLw02pKd"}, false}},
		{"URL", "https://h.example.test/mcp?page_token=nextpage", result{[]string{"https://h.example.test/mcp?page_token=nextpage"}, true}},
		{"URL", "https://h.example.test/mcp?secret_value=hunter", result{[]string{"https://h.example.test/mcp?secret_value=hunter"}, true}},
		// … but a word naming the sort of credential is none.
		{"URL", "https://h.example.test/mcp?token_type=bearer", result{}},
		{"URL", "https://h.example.test/mcp?tokenType=Bearer&key_format=PEM", result{}},
		{"TOKEN_TYPE", "bearer", result{}},
		{"AuthKeyFormat", "PEM", result{}},
		// … unless it is not a word, or the name does not say so.
		{"TOKEN_TYPE", "Zq81xTyLw02pKd", result{[]string{"Zq81xTyLw02pKd"}, false}},
		{"TOKEN", "bearer", result{[]string{"bearer"}, false}},
		// Not credentials.
		{"DATABASE_URL", "postgres://app@db.internal/prod", result{}},
		{"DATABASE_URL", "postgres://db.internal/prod?sslmode=require", result{}},
		{"DATABASE_URL", "postgres://app:${DB_PASSWORD}@db/prod", result{}},
		{"PG", "host=db password=${PGPASSWORD}", result{}},
		{"DATABASE_URL", "${DATABASE_URL}", result{}},
		{"API_URL", "https://api.example.com/v1/users/@me", result{}},
		{"MIRROR", "git@github.com:org/repo.git", result{}},
		{"PATH", "/usr/local/bin:/usr/bin", result{}},
		{"PATTERN", "a=b;c=d", result{}},
		{"COMPATIBILITY", "strict", result{}},
		{"PASSTHROUGH", "SOME_VAR", result{}},
		{"KEYBOARD_LAYOUT", "us", result{}},
		{"DEBUG", "mcp:*", result{}},
		{"PWD", "/home/me/project", result{}},
		{"GITHUB_PAT", "${GITHUB_PAT}", result{}},
		{"MYSQL_PWD", "", result{}},
		{"CONNECTION_STRING", "./local.db", result{}},
		{"DB_PWD_MIN", "12", result{}},
		{"SESSION_COOKIE", "false", result{}},
		{"CREDENTIALS_FILE", "~/.config/app/creds.json", result{}},
		{"X", "DSN=mydb;UID=sa", result{}},
	}
	for _, tt := range tests {
		var got result
		got.Secrets, got.Weak = PlainSecrets(tt.name, tt.value)
		if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("PlainSecrets(%q, %q) (-want +got):\n%s", tt.name, tt.value, diff)
		}
		if plain := PlainCredential(tt.name, tt.value); plain != (len(tt.want.Secrets) > 0) {
			t.Errorf("PlainCredential(%q, %q) = %v", tt.name, tt.value, plain)
		}
	}
}

// TestSecrets: a credential from the secret store is scrubbed whole and,
// a DATABASE_URL moved there, its password alone.
func TestSecrets(t *testing.T) {
	tests := []struct {
		value string
		want  []string
	}{
		{"ghp_TESTONLYaaaaaaaaaaaaaaaaaaaaaaaaaaaa1", []string{"ghp_TESTONLYaaaaaaaaaaaaaaaaaaaaaaaaaaaa1"}},
		{"postgres://app:Hunter2SuperSecretPw@db/prod", []string{"postgres://app:Hunter2SuperSecretPw@db/prod", "Hunter2SuperSecretPw"}},
		{"postgres://app:pw@db/prod", []string{"postgres://app:pw@db/prod"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, Secrets(tt.value)); diff != "" {
			t.Errorf("Secrets(%q) (-want +got):\n%s", tt.value, diff)
		}
	}
}

func TestCredentialArgs(t *testing.T) {
	args := []string{
		"-y", "@modelcontextprotocol/server-postgres",
		"--url", "postgres://app:Hunter2SuperSecretPw@db/prod",
		"--dsn=postgres://u:pw@h/db",
		"--api-key", "k3y-v4lue",
		"--token=t0ken-v4lue",
		"ghp_TESTONLYaaaaaaaaaaaaaaaaaaaaaaaaaaaa1",
		"--max-tokens", "4096",
		"--key-file", "/etc/app/key.pem",
		"--use-api-key=true",
		"--pattern", "*.md",
		"postgres://db/prod",
		"--token-type", "bearer",
		"--api-key-format=pem",
	}
	want := []CredentialArg{
		{Index: 3, Flag: "--url", Secrets: []string{"Hunter2SuperSecretPw"}},
		{Index: 4, Flag: "--dsn", Secrets: []string{"postgres://u:pw@h/db"}, Weak: true},
		{Index: 6, Flag: "--api-key", Secrets: []string{"k3y-v4lue"}},
		{Index: 7, Flag: "--token", Secrets: []string{"t0ken-v4lue"}},
		{Index: 8, Secrets: []string{"ghp_TESTONLYaaaaaaaaaaaaaaaaaaaaaaaaaaaa1"}},
	}
	if diff := cmp.Diff(want, CredentialArgs(args)); diff != "" {
		t.Errorf("CredentialArgs (-want +got):\n%s", diff)
	}
}

func TestPlainCredentials(t *testing.T) {
	s := &Source{
		Command: "node",
		Args:    []string{"server.js", "--url", "postgres://app:Arg5ecretPw@db/prod"},
		Env: map[string]string{
			"DATABASE_URL": "postgres://app:Hunter2SuperSecretPw@db.internal/prod",
			"GITHUB_PAT":   "abcdEFGHijklMNOPqrst1234",
			"REDIS_URL":    "redis://:pw@cache:6379",
			"GITHUB_TOKEN": "${GITHUB_TOKEN}",
			"PATH":         "/usr/bin",
			"MAX_TOKENS":   "4096",
			// A file name, not the credential it holds.
			"GOOGLE_APPLICATION_CREDENTIALS": "service-account.json",
			"TLS_PRIVATE_KEY":                "server.key",
		},
		Headers: map[string]string{"X-Db-Password": "h3ader-pw", "X-Region": "eu"},
	}
	got := s.PlainCredentials()
	sort.Strings(got)
	want := []string{"Arg5ecretPw", "Hunter2SuperSecretPw", "abcdEFGHijklMNOPqrst1234", "h3ader-pw", "redis://:pw@cache:6379"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("PlainCredentials (-want +got):\n%s", diff)
	}
}

// TestMinSecretLen: a password shorter than the scrubber's floor is never
// scrubbed on its own, whatever the scrubber's floor becomes.
func TestMinSecretLen(t *testing.T) {
	if minSecretLen != scrub.MinLen {
		t.Errorf("minSecretLen = %d, scrub.MinLen = %d", minSecretLen, scrub.MinLen)
	}
}

// FuzzPlainSecrets: any name and value: no panic, no empty secret, the
// whole value among the secrets when a password cannot be scrubbed on its
// own, and PlainCredential agrees.
func FuzzPlainSecrets(f *testing.F) {
	for _, s := range [][2]string{
		{"DATABASE_URL", "postgres://app:Hunter2SuperSecretPw@db.internal/prod"},
		{"DATABASE_URL", "postgres://app:pw@db/prod"},
		{"SQL", `Server=db;Password="a""b";PWD={c}}d}`},
		{"PG", `host=db password='x\' y' user=app`},
		{"GITHUB_PAT", "abcdEFGHijklMNOPqrst1234"},
		{"KEYBOARD_LAYOUT", "us"},
		{"", "a://:@"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, name, value string) {
		out, weak := PlainSecrets(name, value)
		for _, s := range out {
			if s == "" {
				t.Fatalf("PlainSecrets(%q, %q) holds an empty secret: %q", name, value, out)
			}
		}
		v := strings.TrimSpace(value)
		if weak && !slices.Contains(out, v) {
			t.Fatalf("PlainSecrets(%q, %q) = %q, weak, without the whole value", name, value, out)
		}
		if PlainCredential(name, value) != (len(out) > 0) {
			t.Fatalf("PlainCredential(%q, %q) disagrees with PlainSecrets %q", name, value, out)
		}
	})
}

// A remote server's URL holding a password (imported from an agent's
// config) gives the password, and user:password, which the server is sent
// as HTTP Basic: an echoing server handed both to the model.
func TestPlainCredentialsOfAURL(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want []string
	}{
		{"http://bob:pw-Kq72mZ8xR4tY@127.0.0.1:3012/mcp", []string{"bob:pw-Kq72mZ8xR4tY", "pw-Kq72mZ8xR4tY"}},
		{"https://bob@mcp.example.com/mcp", nil},
		{"https://mcp.example.com/mcp", nil},
	} {
		got := (&Source{Kind: KindHTTP, URL: tc.url}).PlainCredentials()
		sort.Strings(got)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("PlainCredentials of %s (-want +got):\n%s", tc.url, diff)
		}
	}
}

func TestRedactArgs(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want []string
	}{
		{"a flag then its token", []string{"--token", "ghp_TESTONLYaaaaaaaaaaaaaaaaaaaaaaaaaaaa1", "--verbose"}, []string{"--token", Mask, "--verbose"}},
		{"a flag with its value", []string{"--api-key=k3y-Rand0m-Value-9x"}, []string{"--api-key=" + Mask}},
		{"a token shaped value alone", []string{"serve", "sk-TESTONLY0123456789abcdef"}, []string{"serve", Mask}},
		{"a URL's token query parameter", []string{"--url", "https://mcp.example.test/mcp?region=eu&access_token=Zq81xTyLw02pKd&v=2"}, []string{"--url", "https://mcp.example.test/mcp?region=eu&access_token=" + Mask + "&v=2"}},
		{"a URL's password", []string{"postgres://app:Wq8zLp2Rx7Kd@db.example.test/app"}, []string{"postgres://app:" + Mask + "@db.example.test/app"}},
		{"nothing secret", []string{"-y", "@modelcontextprotocol/server-memory", "--max-tokens", "4096", "--token-file=~/.token"}, []string{"-y", "@modelcontextprotocol/server-memory", "--max-tokens", "4096", "--token-file=~/.token"}},
		{"a reference", []string{"--token", "${GITHUB_TOKEN}"}, []string{"--token", "${GITHUB_TOKEN}"}},
		{"none", nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, RedactArgs(tt.args)); diff != "" {
				t.Errorf("RedactArgs(%q) (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

func TestShownURL(t *testing.T) {
	for _, tt := range []struct{ url, want string }{
		{"https://mcp.example.test/mcp?apiKey=Zq81xTyLw02pKd", "https://mcp.example.test/mcp?apiKey=" + Mask},
		{"https://u:Wq8zLp2Rx7Kd@mcp.example.test/mcp", "https://u:" + Mask + "@mcp.example.test/mcp"},
		{"https://mcp.example.test/mcp?region=eu", "https://mcp.example.test/mcp?region=eu"},
		{"https://mcp.example.test/mcp?token_type=bearer", "https://mcp.example.test/mcp?token_type=bearer"},
		{"https://mcp.example.test/mcp?access_token=Zq81xTyLw02pKd&token_type=bearer", "https://mcp.example.test/mcp?access_token=" + Mask + "&token_type=bearer"},
	} {
		s := Source{Kind: KindHTTP, URL: tt.url}
		if got := s.ShownURL(); got != tt.want {
			t.Errorf("ShownURL(%q) = %q, want %q", tt.url, got, tt.want)
		}
	}
}

func TestShownCommand(t *testing.T) {
	argv := []string{"/usr/bin/my server", "--token", "ghp_TESTONLYaaaaaaaaaaaaaaaaaaaaaaaaaaaa1", "it's", "--url=https://h.example.test/?token=Zq81xTyLw02pKd"}
	want := QuoteCommand([]string{"/usr/bin/my server", "--token", Mask, "it's", "--url=https://h.example.test/?token=" + Mask})
	if got := ShownCommand(QuoteCommand(argv)); got != want {
		t.Errorf("ShownCommand = %q, want %q", got, want)
	}
	if got := ShownCommand("node server.js"); got != "node server.js" {
		t.Errorf("ShownCommand of a plain command = %q", got)
	}
}
