package authserver_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// tsClient plays a connector with the TypeScript SDK's OAuth provider (1.x
// and 2.x):
// 401 → discovery → DCR → authorize (the consent page is confirmed by
// posting its form as the signed-in person) → finishAuth → token → a tool
// call; then a refresh, and a second call with the refreshed token.
const tsClient = `
import { Client } from 'CLIENT';
import { StreamableHTTPClientTransport } from 'TRANSPORT';
import { auth, UnauthorizedError } from 'AUTH';

const [serverUrl, person, major, callbackBase] = process.argv.slice(2);
// The client's loopback callback: a real listener when a browser follows it.
const redirectUrl = (callbackBase || 'http://127.0.0.1:9') + '/callback';
let info, tokens, verifier, code, callback, discovery;
const provider = {
  get redirectUrl() { return redirectUrl; },
  get clientMetadata() {
    return { client_name: 'TS connector', redirect_uris: [redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'client_secret_post' };
  },
  clientInformation() { return info; },
  saveClientInformation(i) { info = i; },
  tokens() { return tokens; },
  saveTokens(t) { tokens = t; },
  saveCodeVerifier(v) { verifier = v; },
  codeVerifier() { return verifier; },
  saveDiscoveryState(d) { discovery = d; },
  discoveryState() { return discovery; },
  async redirectToAuthorization(url) {
    if (process.env.BROWSER_EXECUTABLE) return inBrowser(url);
    // The browser: open the consent page as the signed-in person, allow.
    const headers = { cookie: 'person=' + person };
    const page = await (await fetch(url, { headers })).text();
    if (!page.includes('TS connector') || !page.includes(redirectUrl)) throw new Error('consent page does not name the client and redirect: ' + page);
    const form = new URLSearchParams({ decision: 'allow' });
    for (const m of page.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
      form.set(m[1], m[2].replaceAll('&#43;', '+').replaceAll('&amp;', '&').replaceAll('&#34;', '"').replaceAll('&#39;', "'").replaceAll('&lt;', '<').replaceAll('&gt;', '>'));
    }
    const resp = await fetch(new URL('/authorize', url), { method: 'POST', body: form, redirect: 'manual',
      headers: { ...headers, origin: new URL(url).origin } });
    const loc = new URL(resp.headers.get('location'));
    if (loc.searchParams.get('error')) throw new Error('authorize: ' + loc.searchParams.get('error_description'));
    code = loc.searchParams.get('code');
    callback = loc.searchParams;
  },
};

// inBrowser confirms the consent page in headless Chromium: the signed-in
// person's cookie, the page naming the client and redirect, a click on
// Allow, and the browser following the redirect back to the client (which
// the page's CSP must allow).
async function inBrowser(url) {
  const { chromium } = await import(process.env.PLAYWRIGHT);
  const browser = await chromium.launch({ executablePath: process.env.BROWSER_EXECUTABLE, headless: true });
  try {
    const ctx = await browser.newContext();
    await ctx.addCookies([{ name: 'person', value: person, url: new URL(url).origin }]);
    const page = await ctx.newPage();
    await page.goto(url.toString());
    const text = await page.textContent('body');
    if (!text.includes('TS connector') || !text.includes(redirectUrl)) throw new Error('consent page does not name the client and redirect: ' + text);
    await Promise.all([page.waitForURL(redirectUrl + '**'), page.click('#allow')]);
    const back = new URL(page.url());
    if (!back || back.searchParams.get('error')) throw new Error('authorize: ' + back);
    code = back.searchParams.get('code');
    callback = back.searchParams;
  } finally {
    await browser.close();
  }
}

async function connect() {
  const transport = new StreamableHTTPClientTransport(new URL(serverUrl), { authProvider: provider });
  const client = new Client({ name: 'ts', version: '0' });
  try {
    await client.connect(transport);
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
    // 2.x takes the whole callback, and checks its iss (RFC 9207).
    await transport.finishAuth(major === '2' ? callback : code);
    return connect();
  }
  return client;
}

let client = await connect();
let r = await client.callTool({ name: 'whoami', arguments: {} });
console.log('call1', r.structuredContent.tenant);
const first = tokens;
await client.close();
// Refresh: auth() with tokens present uses the refresh token.
const res = await auth(provider, { serverUrl });
if (res !== 'AUTHORIZED' || tokens.access_token === first.access_token || tokens.refresh_token === first.refresh_token) throw new Error('refresh did not rotate');
client = await connect();
r = await client.callTool({ name: 'whoami', arguments: {} });
console.log('call2', r.structuredContent.tenant);
await client.close();
`

func TestTypeScriptSDKClient(t *testing.T) {
	node := testenv.Node(t)
	sdk1 := testenv.NPMPath(t, "@modelcontextprotocol/sdk/dist/esm")
	sdk2 := testenv.NPMPath(t, "@modelcontextprotocol/client/dist/index.mjs")
	for _, tt := range []struct{ name, major, client, transport, auth string }{
		{"sdk 1.x", "1", sdk1 + "/client/index.js", sdk1 + "/client/streamableHttp.js", sdk1 + "/client/auth.js"},
		{"client 2.x", "2", sdk2, sdk2, sdk2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			script := strings.NewReplacer("'CLIENT'", "'"+tt.client+"'", "'TRANSPORT'", "'"+tt.transport+"'", "'AUTH'", "'"+tt.auth+"'").Replace(tsClient)
			runTSClient(t, node, script, tt.major)
		})
	}
}

// TestConsentInChromium: the TypeScript client 2.x signs in with the
// consent page confirmed in headless Chromium through playwright-core.
func TestConsentInChromium(t *testing.T) {
	node := testenv.Node(t)
	sdk2 := testenv.NPMPath(t, "@modelcontextprotocol/client/dist/index.mjs")
	pw := testenv.NPMPath(t, "playwright-core/index.mjs")
	var chromium string
	for _, name := range []string{"chromium-headless-shell", "chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		msg := "Chromium (Debian's chromium-headless-shell) missing: run scripts/setup.sh --tests"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	t.Setenv("BROWSER_EXECUTABLE", chromium)
	t.Setenv("PLAYWRIGHT", pw)
	script := strings.NewReplacer("'CLIENT'", "'"+sdk2+"'", "'TRANSPORT'", "'"+sdk2+"'", "'AUTH'", "'"+sdk2+"'").Replace(tsClient)
	callback := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "signed in; you may close this window")
	}))
	defer callback.Close()
	runTSClient(t, node, script, "2", callback.URL)
}

func runTSClient(t *testing.T, node, script string, args ...string) {
	e := newEnv(t)
	srv := mcp.NewServer(&mcp.Implementation{Name: "hub", Version: "0"}, nil)
	type out struct {
		Tenant string `json:"tenant"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, out, error) {
		if req.Extra.TokenInfo == nil {
			return nil, out{}, errors.New("no token info")
		}
		return nil, out{Tenant: req.Extra.TokenInfo.UserID}, nil
	})
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	e.mcp.Store(&h)

	file := filepath.Join(t.TempDir(), "client.mjs")
	if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(time.Minute))
	defer cancel()
	got, err := exec.CommandContext(ctx, node, append([]string{file, e.resource(), "dave"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("the TypeScript client failed: %v\n%s", err, got)
	}
	if string(got) != "call1 dave\ncall2 dave\n" {
		t.Errorf("output:\n%s", got)
	}
}
