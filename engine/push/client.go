package push

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// ErrStale is an apply refused because the hosted hub changed since its
// plan was made.
var ErrStale = errors.New("the hosted hub changed since the plan was made")

// APIError is an error answer of the hosted hub.
type APIError struct {
	Status  int
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("the hosted hub answered %d: %s", e.Status, e.Message)
}

// Is makes a 409 match ErrStale.
func (e *APIError) Is(target error) bool {
	return target == ErrStale && e.Status == http.StatusConflict
}

// Client calls a hosted hub's push and status API.
type Client struct {
	// URL is the hosted hub's base URL (https://hub.example.com).
	URL string
	// HTTP carries the person's bearer token (hostedlogin's Login.Client).
	HTTP *http.Client
}

// SecureURL says whether secrets may be sent to base: https, or plain
// http to this machine only.
func SecureURL(base string) error {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%q is not an absolute URL", base)
	}
	if u.Scheme == "https" {
		return nil
	}
	h := u.Hostname()
	if ip := net.ParseIP(h); u.Scheme == "http" && (h == "localhost" || (ip != nil && ip.IsLoopback())) {
		return nil
	}
	return fmt.Errorf("%s is not https: secrets are sent over TLS only", base)
}

// Plan asks what pushing b would change.
func (c *Client) Plan(ctx context.Context, b *Bundle) (*Plan, error) {
	var p Plan
	if err := c.do(ctx, http.MethodPost, PathPlan, b, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// Apply applies b, planned with hash.
func (c *Client) Apply(ctx context.Context, b *Bundle, hash string) (*Result, error) {
	var r Result
	if err := c.do(ctx, http.MethodPost, PathApply, ApplyRequest{Bundle: *b, Hash: hash}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Status reads the hosted hub's state.
func (c *Client) Status(ctx context.Context) (*Status, error) {
	var s Status
	if err := c.do(ctx, http.MethodGet, PathStatus, nil, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	if b, ok := in.(*Bundle); ok && len(b.Secrets) > 0 {
		if err := SecureURL(c.URL); err != nil {
			return fmt.Errorf("pushing: %w", err)
		}
	}
	if r, ok := in.(ApplyRequest); ok && len(r.Secrets) > 0 {
		if err := SecureURL(c.URL); err != nil {
			return fmt.Errorf("pushing: %w", err)
		}
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.URL, "/")+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("reaching the hosted hub: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return fmt.Errorf("reading the hosted hub's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(data))
			if len(e.Error) > 300 {
				e.Error = e.Error[:300] + "…"
			}
		}
		return &APIError{Status: resp.StatusCode, Message: e.Error}
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("reading the hosted hub's answer: %w", err)
	}
	return nil
}
