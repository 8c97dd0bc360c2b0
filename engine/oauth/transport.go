package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// Transport puts the access token of Source on requests to the origin it
// was issued for, and on no other: a request (or a redirect) elsewhere goes
// out without it. A 401 gets the tokens refreshed and the request sent once
// more; when that fails too, or the server answers 403 insufficient_scope,
// Challenge (an interactive client) may sign in again, else the request
// fails with a *SignInError.
type Transport struct {
	Base   http.RoundTripper // http.DefaultTransport when nil
	Source *Source
	// Origin is where the token may go; "" means the tokens' own Origin.
	Origin string
	// Challenge signs in again (and calls Source.Set) after the server
	// refused the tokens for good; the request is then retried. At most
	// MaxChallenges times per request. Nil: no sign-in from here.
	Challenge func(ctx context.Context, ch Challenge) error

	chMu sync.Mutex // one interactive sign-in at a time
}

// MaxChallenges bounds the sign-ins one request may cause (a server that
// keeps asking for a scope it never grants must not loop).
const MaxChallenges = 2

func (t *Transport) base() http.RoundTripper {
	if t.Base != nil {
		return t.Base
	}
	return http.DefaultTransport
}

func (t *Transport) origin() string {
	if t.Origin != "" {
		return t.Origin
	}
	if tk := t.Source.Tokens(); tk != nil {
		return tk.Origin
	}
	return ""
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.roundTrip(req)
	var se *SignInError
	if errors.As(err, &se) {
		t.Source.note(se)
	}
	return resp, err
}

func (t *Transport) roundTrip(req *http.Request) (*http.Response, error) {
	o := t.origin()
	if o == "" || Origin(req.URL) != o {
		return t.base().RoundTrip(req)
	}
	ctx := req.Context()
	tok, err := t.Source.Token(ctx)
	if err != nil && (t.Challenge == nil || !errors.Is(err, ErrSignInRequired)) {
		return nil, err
	}
	resp, err := t.send(req, tok)
	if err != nil {
		return nil, err
	}
	// A 401 gets the tokens refreshed once. Adopting tokens another process
	// refreshed meanwhile does not count: the server may refuse those too.
	asked := false
	for challenges, adopted := 0, 0; ; {
		switch {
		case resp.StatusCode == http.StatusUnauthorized:
		case resp.StatusCode == http.StatusForbidden && ParseChallenge(resp.Header).Error == "insufficient_scope":
		default:
			return resp, nil
		}
		if !replayable(req) {
			return resp, nil
		}
		ch := ParseChallenge(resp.Header)
		status := resp.StatusCode
		drain(resp)
		if status == http.StatusUnauthorized && tok != nil && !asked && adopted < 2 {
			nt, didAsk, rerr := t.Source.refreshFor(ctx, tok.AccessToken)
			if didAsk {
				asked = true
			} else {
				adopted++
			}
			if rerr == nil {
				tok = nt
				if resp, err = t.send(req, tok); err != nil {
					return nil, err
				}
				continue
			}
			if t.Challenge == nil || !errors.Is(rerr, ErrSignInRequired) {
				return nil, rerr
			}
		}
		if t.Challenge == nil {
			if status == http.StatusForbidden {
				return nil, &SignInError{Reason: "the server wants more scopes than the sign-in gave (" + strings.Join(ch.Scopes, " ") + ")"}
			}
			return nil, &SignInError{Reason: "the server refused the access token, also after refreshing it"}
		}
		if challenges >= MaxChallenges {
			return nil, &SignInError{Reason: fmt.Sprintf("the server still refused the tokens after %d sign-ins", challenges)}
		}
		challenges++
		if err := t.challenge(ctx, tok, ch); err != nil {
			return nil, err
		}
		tok = t.Source.Tokens()
		if resp, err = t.send(req, tok); err != nil {
			return nil, err
		}
	}
}

// challenge signs in again unless another request did while this one
// waited for its turn.
func (t *Transport) challenge(ctx context.Context, used *Tokens, ch Challenge) error {
	t.chMu.Lock()
	defer t.chMu.Unlock()
	if cur := t.Source.Tokens(); cur != nil && (used == nil || cur.AccessToken != used.AccessToken) {
		return nil
	}
	return t.Challenge(ctx, ch)
}

func (t *Transport) send(req *http.Request, tok *Tokens) (*http.Response, error) {
	r := req.Clone(req.Context())
	if req.GetBody != nil && req.Body != nil && req.Body != http.NoBody {
		b, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		r.Body = b
	}
	if tok != nil {
		r.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	}
	return t.base().RoundTrip(r)
}

func replayable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// Interactive is a Transport.Challenge that signs in again with o (o.Open
// shows the page), asking for the scopes already granted plus those the
// server wants now (step-up authorization), and saves the new tokens.
func Interactive(s *Source, o Options) func(ctx context.Context, ch Challenge) error {
	return func(ctx context.Context, ch Challenge) error {
		oo := o
		oo.Challenge = &ch
		if len(ch.Scopes) > 0 {
			var scopes []string
			if cur := s.Tokens(); cur != nil {
				scopes = slices.Clone(cur.Scopes)
			}
			for _, sc := range ch.Scopes {
				if !slices.Contains(scopes, sc) {
					scopes = append(scopes, sc)
				}
			}
			oo.Scopes = scopes
		}
		nt, err := SignIn(ctx, oo)
		if err != nil {
			return err
		}
		return s.Set(ctx, nt)
	}
}
