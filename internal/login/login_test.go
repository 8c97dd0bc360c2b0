package login

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/google/go-cmp/cmp"
)

func flowFor(s *deviceServer) *Flow {
	return &Flow{Endpoints: s.endpoints(), ClientID: "test-client", Scopes: []string{"repo", "read:org"}, HTTPClient: s.Client()}
}

func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(60*time.Second))
	t.Cleanup(cancel)
	return ctx
}

// TestApproved: the device code is asked for with the client and scopes;
// the user code and verification URIs come back; the token endpoint is
// polled at the interval, one request per poll, until it gives the token.
func TestApproved(t *testing.T) {
	t.Parallel()
	s := newDeviceServer(t, answer{err: "authorization_pending"}, answer{err: "authorization_pending"}, answer{token: "tok-approved", refresh: "ref-1", expires: 3600})
	s.complete = true
	ctx := waitCtx(t)
	f := flowFor(s)
	da, err := f.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if da.UserCode != userCode || da.VerificationURI != s.URL+"/activate" || da.VerificationURIComplete != s.URL+"/activate?user_code="+userCode {
		t.Fatalf("device authorization = %+v", da)
	}
	tok, err := f.Wait(ctx, da)
	if err != nil {
		t.Fatal(err)
	}
	if tok.AccessToken != "tok-approved" || tok.RefreshToken != "ref-1" || tok.Expiry.IsZero() {
		t.Fatalf("token = %+v", tok)
	}
	polls, pollReqs, deviceReqs := s.seen()
	if len(deviceReqs) != 1 || deviceReqs[0].Get("client_id") != "test-client" || deviceReqs[0].Get("scope") != "repo read:org" {
		t.Errorf("device authorization requests = %v", deviceReqs)
	}
	// Three polls, three requests: each pending answer is not re-sent
	// with another client authentication at once.
	if len(polls) != 3 {
		t.Fatalf("the token endpoint was polled %d times, want 3 (one request per poll)", len(polls))
	}
	for i, r := range pollReqs {
		if r.Get("device_code") != "dc-1" || r.Get("client_id") != "test-client" || r.Get("client_secret") != "" {
			t.Errorf("poll %d = %v", i, r)
		}
	}
	for i := 1; i < len(polls); i++ {
		if gap := polls[i].Sub(polls[i-1]); gap < 900*time.Millisecond {
			t.Errorf("poll %d came %v after the one before, under the 1 s interval", i, gap)
		}
	}
}

// TestSlowDown: slow_down adds 5 s to the interval, for that poll and every
// one after (RFC 8628 §3.5).
func TestSlowDown(t *testing.T) {
	t.Parallel()
	s := newDeviceServer(t, answer{err: "slow_down"}, answer{err: "authorization_pending"}, answer{token: "tok-slow"})
	ctx := waitCtx(t)
	f := flowFor(s)
	da, err := f.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := f.Wait(ctx, da)
	if err != nil {
		t.Fatal(err)
	}
	if tok.AccessToken != "tok-slow" {
		t.Fatalf("token = %+v", tok)
	}
	polls, _, _ := s.seen()
	if len(polls) != 3 {
		t.Fatalf("%d polls, want 3", len(polls))
	}
	for i := 1; i < 3; i++ {
		if gap := polls[i].Sub(polls[i-1]); gap < 5900*time.Millisecond {
			t.Errorf("after slow_down, poll %d came %v after the one before; the interval is 1 s + 5 s", i, gap)
		}
	}
}

// TestEnds: denial, expiry (said by the server, or the code's time running
// out while it says pending), and errors of the token endpoint end the
// wait with what happened.
func TestEnds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		answers   []answer
		expiresIn int
		want      error
		wantMsg   string
	}{
		{name: "denied", answers: []answer{{err: "authorization_pending"}, {err: "access_denied"}}, want: ErrDenied, wantMsg: "the sign-in was denied (scripted access_denied)"},
		{name: "expired_token", answers: []answer{{err: "expired_token"}}, want: ErrExpired},
		{name: "expiry", answers: []answer{{err: "authorization_pending"}}, expiresIn: 2, want: ErrExpired},
		{name: "http error", answers: []answer{{err: "http500"}}, wantMsg: "500 Internal Server Error: upstream exploded"},
		{name: "json error", answers: []answer{{err: "badjson"}}, wantMsg: "cannot parse json"},
		{name: "oauth error", answers: []answer{{err: "invalid_grant"}}, wantMsg: "the server answered invalid_grant: scripted invalid_grant"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newDeviceServer(t, tc.answers...)
			if tc.expiresIn != 0 {
				s.expiresIn = tc.expiresIn
			}
			ctx := waitCtx(t)
			f := flowFor(s)
			da, err := f.Start(ctx)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			tok, err := f.Wait(ctx, da)
			if err == nil {
				t.Fatalf("Wait = %+v, want an error", tok)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("Wait error = %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("Wait error = %q, want it to say %q", err, tc.wantMsg)
			}
			if tc.name == "expiry" {
				if d := time.Since(start); d < 1500*time.Millisecond {
					t.Errorf("expired after %v, before the code's 2 s", d)
				}
				if polls, _, _ := s.seen(); len(polls) == 0 {
					t.Error("never polled before the code expired")
				}
			}
		})
	}
}

// TestCancel: cancelling (Ctrl-C) stops the polling at once.
func TestCancel(t *testing.T) {
	t.Parallel()
	s := newDeviceServer(t)
	s.interval = 30
	f := flowFor(s)
	da, err := f.Start(waitCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(waitCtx(t))
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err = f.Wait(ctx, da)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v, want context.Canceled", err)
	}
	if polls, _, _ := s.seen(); len(polls) != 0 {
		t.Errorf("%d polls after the cancel", len(polls))
	}
}

// TestGitHubForm: GitHub's token endpoint answers form-encoded, an error
// with status 200; the flow reads both.
func TestGitHubForm(t *testing.T) {
	t.Parallel()
	s := newDeviceServer(t, answer{err: "authorization_pending"}, answer{token: "gho_formtoken"})
	s.form = true
	ctx := waitCtx(t)
	f := flowFor(s)
	da, err := f.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := f.Wait(ctx, da)
	if err != nil {
		t.Fatal(err)
	}
	if tok.AccessToken != "gho_formtoken" || tok.Extra("scope") != "repo" {
		t.Fatalf("token = %+v (scope %v)", tok, tok.Extra("scope"))
	}
	if polls, _, _ := s.seen(); len(polls) != 2 {
		t.Errorf("%d polls, want 2", len(polls))
	}
}

// TestStartErrors: a device authorization endpoint that fails, answers an
// OAuth error, bad JSON or an incomplete answer; no client ID.
func TestStartErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		noID    bool
		want    string
	}{
		{name: "http error", handler: func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		}, want: "503 Service Unavailable: down for maintenance"},
		{name: "oauth error", handler: func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 401, map[string]string{"error": "invalid_client", "error_description": "unknown client"})
		}, want: "the server answered invalid_client: unknown client"},
		{name: "bad json", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"device_code": 12`))
		}, want: "unmarshal"},
		{name: "incomplete", handler: func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 200, map[string]any{"device_code": "dc", "expires_in": 60})
		}, want: "the answer has no user_code, verification_uri (RFC 8628 §3.2)"},
		{name: "bad verification uri", handler: func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 200, map[string]any{"device_code": "dc", "user_code": "A", "verification_uri": "javascript:alert(1)"})
		}, want: `the verification URI "javascript:alert(1)" is not an http(s) URL`},
		{name: "no client id", noID: true, want: "no OAuth client ID for http://127.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			f := &Flow{Endpoints: Endpoints{Issuer: srv.URL, DeviceAuthURL: srv.URL + "/device", TokenURL: srv.URL + "/token"}, ClientID: "c", HTTPClient: srv.Client()}
			if tc.noID {
				f.ClientID = ""
			}
			da, err := f.Start(waitCtx(t))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Start = %+v, %v; want an error saying %q", da, err, tc.want)
			}
		})
	}
}

func TestNoClientIDGitHub(t *testing.T) {
	err := NoClientIDHelp(GitHubIssuer)
	for _, want := range []string{"register an OAuth app", "Enable Device Flow", "--client-id", ClientIDEnv} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	if !errors.Is(err, ErrNoClientID) {
		t.Errorf("%v is not ErrNoClientID", err)
	}
}

// TestDiscover: RFC 8414 metadata (with the issuer's path after the
// well-known name), the OpenID Connect document when there is none,
// GitHub's known endpoints, and each way discovery is refused.
func TestDiscover(t *testing.T) {
	t.Parallel()
	type meta = map[string]any
	for _, tc := range []struct {
		name   string
		path   string // the issuer's path
		routes map[string]func(iss, base string) (int, string, any)
		want   func(base string) Endpoints
		err    string
	}{
		{
			name: "rfc8414 with path", path: "/tenant",
			routes: map[string]func(iss, base string) (int, string, any){
				"/.well-known/oauth-authorization-server/tenant": func(iss, base string) (int, string, any) {
					return 200, "application/json", meta{"issuer": iss, "device_authorization_endpoint": base + "/d", "token_endpoint": base + "/t"}
				},
			},
			want: func(base string) Endpoints {
				return Endpoints{Issuer: base + "/tenant", DeviceAuthURL: base + "/d", TokenURL: base + "/t"}
			},
		},
		{
			name: "openid fallback",
			routes: map[string]func(iss, base string) (int, string, any){
				"/.well-known/openid-configuration": func(iss, base string) (int, string, any) {
					return 200, "application/json; charset=utf-8", meta{"issuer": iss + "/", "device_authorization_endpoint": base + "/d", "token_endpoint": base + "/t"}
				},
			},
			want: func(base string) Endpoints {
				return Endpoints{Issuer: base, DeviceAuthURL: base + "/d", TokenURL: base + "/t"}
			},
		},
		{
			name: "no device endpoint",
			routes: map[string]func(iss, base string) (int, string, any){
				"/.well-known/oauth-authorization-server": func(iss, base string) (int, string, any) {
					return 200, "application/json", meta{"issuer": iss, "authorization_endpoint": base + "/a", "token_endpoint": base + "/t"}
				},
			},
			err: "has no device_authorization_endpoint: this server does not offer the device flow (RFC 8628)",
		},
		{
			name: "no token endpoint",
			routes: map[string]func(iss, base string) (int, string, any){
				"/.well-known/oauth-authorization-server": func(iss, base string) (int, string, any) {
					return 200, "application/json", meta{"issuer": iss, "device_authorization_endpoint": base + "/d"}
				},
			},
			err: "has no token_endpoint",
		},
		{
			name: "issuer mismatch",
			routes: map[string]func(iss, base string) (int, string, any){
				"/.well-known/oauth-authorization-server": func(iss, base string) (int, string, any) {
					return 200, "application/json", meta{"issuer": "https://evil.example", "device_authorization_endpoint": base + "/d", "token_endpoint": base + "/t"}
				},
			},
			err: `names the issuer "https://evil.example", not`,
		},
		{
			name: "plain http endpoint",
			routes: map[string]func(iss, base string) (int, string, any){
				"/.well-known/oauth-authorization-server": func(iss, base string) (int, string, any) {
					return 200, "application/json", meta{"issuer": iss, "device_authorization_endpoint": "http://auth.example/d", "token_endpoint": base + "/t"}
				},
			},
			err: `its device_authorization_endpoint "http://auth.example/d": plain http is allowed only on this machine`,
		},
		{
			name: "http error",
			routes: map[string]func(iss, base string) (int, string, any){
				"/.well-known/oauth-authorization-server": func(iss, base string) (int, string, any) { return 500, "text/plain", "boom" },
			},
			err: "500 Internal Server Error",
		},
		{
			name: "not json",
			routes: map[string]func(iss, base string) (int, string, any){
				"/.well-known/oauth-authorization-server": func(iss, base string) (int, string, any) { return 200, "text/html", "<html>" },
			},
			err: `content type "text/html", want application/json`,
		},
		{
			name: "bad json",
			routes: map[string]func(iss, base string) (int, string, any){
				"/.well-known/oauth-authorization-server": func(iss, base string) (int, string, any) { return 200, "application/json", "{" },
			},
			err: "decoding the metadata at",
		},
		{
			name:   "nothing",
			routes: map[string]func(iss, base string) (int, string, any){},
			err:    "no authorization server metadata at",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var srv *httptest.Server
			srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				route, ok := tc.routes[r.URL.Path]
				if !ok {
					http.NotFound(w, r)
					return
				}
				status, ct, body := route(srv.URL+tc.path, srv.URL)
				w.Header().Set("Content-Type", ct)
				w.WriteHeader(status)
				if s, ok := body.(string); ok {
					_, _ = w.Write([]byte(s))
					return
				}
				writeJSON(w, status, body)
			}))
			defer srv.Close()
			got, err := Discover(waitCtx(t), srv.Client(), srv.URL+tc.path+"/")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Discover = %+v, %v; want an error saying %q", got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want(srv.URL), got); diff != "" {
				t.Errorf("Discover (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIssuerURL(t *testing.T) {
	t.Parallel()
	got, err := Discover(context.Background(), nil, "https://github.com/")
	if err != nil || got != GitHub {
		t.Fatalf("Discover(GitHub) = %+v, %v", got, err)
	}
	for _, tc := range []struct{ in, want string }{
		{"github.com", "is not an absolute https URL"},
		{"ftp://example.com", "is not an absolute https URL"},
		{"http://gitlab.example.com", "plain http is allowed only on this machine"},
		{"https://example.com/?tenant=a", "has a query, fragment or user"},
		{"https://user@example.com", "has a query, fragment or user"},
		{"https://exa mple.com", "parsing the issuer"},
	} {
		if _, err := ParseIssuer(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseIssuer(%q) = %v, want an error saying %q", tc.in, err, tc.want)
		}
	}
}

// TestRequestTimeout: a token endpoint that does not answer in the HTTP
// client's time (each attempt's) is asked again four times, then the wait
// fails with the request's error, not the code's expiry.
func TestRequestTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var polls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/device" {
			writeJSON(w, 200, map[string]any{"device_code": "dc", "user_code": "A", "verification_uri": "https://example.com/a", "expires_in": 600, "interval": 1})
			return
		}
		polls.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	hc := srv.Client()
	hc.Timeout = 300 * time.Millisecond
	f := &Flow{Endpoints: Endpoints{Issuer: srv.URL, DeviceAuthURL: srv.URL + "/device", TokenURL: srv.URL + "/token"}, ClientID: "c", HTTPClient: hc}
	ctx := waitCtx(t)
	da, err := f.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Wait(ctx, da)
	if err == nil || errors.Is(err, ErrExpired) || !strings.Contains(err.Error(), "waiting for the sign-in at "+srv.URL+"/token") {
		t.Fatalf("Wait = %v, want the request's timeout", err)
	}
	if n := polls.Load(); n != 5 {
		t.Errorf("%d requests, want 5 (one and four retries)", n)
	}
}

// TestConnectionBackoff: a poll whose connection breaks is sent again after
// 1 s, then 2 s (RFC 8628 §3.5), and the polls after it still keep the
// interval; after four failed retries the wait fails.
func TestConnectionBackoff(t *testing.T) {
	t.Parallel()
	s := newDeviceServer(t, answer{err: "drop"}, answer{err: "drop"}, answer{err: "authorization_pending"}, answer{err: "authorization_pending"}, answer{token: "tok-after-drops"})
	ctx := waitCtx(t)
	f := flowFor(s)
	da, err := f.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := f.Wait(ctx, da)
	if err != nil {
		t.Fatal(err)
	}
	if tok.AccessToken != "tok-after-drops" {
		t.Fatalf("token = %+v", tok)
	}
	polls, _, _ := s.seen()
	if len(polls) != 5 {
		t.Fatalf("%d polls, want 5", len(polls))
	}
	for i, min := range []time.Duration{0, 950 * time.Millisecond, 1950 * time.Millisecond, 950 * time.Millisecond, 950 * time.Millisecond} {
		if i == 0 {
			continue
		}
		if gap := polls[i].Sub(polls[i-1]); gap < min {
			t.Errorf("poll %d came %v after the one before, want at least %v", i, gap, min)
		}
	}

	// Always dropped: one poll and four retries, then the error.
	s2 := newDeviceServer(t, answer{err: "drop"})
	f2 := flowFor(s2)
	da2, err := f2.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f2.Wait(ctx, da2); err == nil || errors.Is(err, ErrExpired) || !strings.Contains(err.Error(), "waiting for the sign-in at") {
		t.Fatalf("Wait with every connection dropped = %v", err)
	}
	if polls, _, _ := s2.seen(); len(polls) != 5 {
		t.Errorf("%d requests with every connection dropped, want 5 (one and four retries)", len(polls))
	}
}
