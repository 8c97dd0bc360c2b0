package openapi

import (
	"context"
	"encoding/json"
	"io"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func echoOp() *Operation {
	return &Operation{Method: "POST", Path: "/echo/{id}", BodyKey: "body", BodyType: "application/json", Secured: true, Params: []Param{
		{Name: "id", In: "path", Key: "path_id", Style: "simple", Required: true},
		{Name: "id", In: "query", Key: "query_id", Style: "form", Explode: true},
		{Name: "tags", In: "query", Key: "tags", Style: "form", Explode: true},
		{Name: "ids", In: "query", Key: "ids", Style: "form"},
		{Name: "pipes", In: "query", Key: "pipes", Style: "pipeDelimited"},
		{Name: "filter", In: "query", Key: "filter", Style: "deepObject", Explode: true},
		{Name: "X-Trace", In: "header", Key: "X-Trace", Style: "simple"},
		{Name: "session", In: "cookie", Key: "session", Style: "form", Explode: true},
	}}
}

type built struct {
	URL     string
	Headers map[string]string
	Body    string
}

// TestBuild: path templating with every reserved character escaped (a value
// can never add a segment or leave the base path), query arrays by style and
// explode, deepObject, headers, cookies, JSON and form bodies, and the
// credential by each scheme.
func TestBuild(t *testing.T) {
	base, _ := url.Parse("https://api.example.test/v1")
	for _, tc := range []struct {
		name string
		op   *Operation
		args string
		auth *Auth
		want built
	}{
		{"path escaping", echoOp(), `{"path_id":"a/../b?c#d e"}`, nil,
			built{URL: "https://api.example.test/v1/echo/a%2F..%2Fb%3Fc%23d%20e"}},
		{"number and bool", echoOp(), `{"path_id":42,"query_id":true}`, nil,
			built{URL: "https://api.example.test/v1/echo/42?id=true"}},
		{"arrays by style", echoOp(), `{"path_id":"x","tags":["a","b c"],"ids":[1,2],"pipes":["p","q"]}`, nil,
			built{URL: "https://api.example.test/v1/echo/x?ids=1%2C2&pipes=p%7Cq&tags=a&tags=b+c"}},
		{"deepObject", echoOp(), `{"path_id":"x","filter":{"b":"2","a":"1"}}`, nil,
			built{URL: "https://api.example.test/v1/echo/x?filter%5Ba%5D=1&filter%5Bb%5D=2"}},
		{"header, cookie, JSON body", echoOp(), `{"path_id":"x","X-Trace":"t-1","session":"s 1","body":{"name":"Rex"}}`, nil,
			built{URL: "https://api.example.test/v1/echo/x", Headers: map[string]string{"X-Trace": "t-1", "Cookie": "session=s+1", "Content-Type": "application/json"}, Body: `{"name":"Rex"}`}},
		{"form body", &Operation{Method: "POST", Path: "/f", BodyKey: "body", BodyType: "application/x-www-form-urlencoded"}, `{"body":{"a":"1","b":["x","y"]}}`, nil,
			built{URL: "https://api.example.test/v1/f", Headers: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, Body: "a=1&b=x&b=y"}},
		{"api key in header", echoOp(), `{"path_id":"x"}`, &Auth{Scheme: "apiKey", In: "header", Name: "X-API-Key"},
			built{URL: "https://api.example.test/v1/echo/x", Headers: map[string]string{"X-Api-Key": "s3cret"}}},
		{"api key in query", echoOp(), `{"path_id":"x"}`, &Auth{Scheme: "apiKey", In: "query", Name: "key"},
			built{URL: "https://api.example.test/v1/echo/x?key=s3cret"}},
		{"api key in cookie", echoOp(), `{"path_id":"x"}`, &Auth{Scheme: "apiKey", In: "cookie", Name: "k"},
			built{URL: "https://api.example.test/v1/echo/x", Headers: map[string]string{"Cookie": "k=s3cret"}}},
		{"bearer", echoOp(), `{"path_id":"x"}`, &Auth{Scheme: "bearer"},
			built{URL: "https://api.example.test/v1/echo/x", Headers: map[string]string{"Authorization": "Bearer s3cret"}}},
		{"basic", echoOp(), `{"path_id":"x"}`, &Auth{Scheme: "basic"},
			built{URL: "https://api.example.test/v1/echo/x", Headers: map[string]string{"Authorization": "Basic czNjcmV0"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var args map[string]any
			if err := json.Unmarshal([]byte(tc.args), &args); err != nil {
				t.Fatal(err)
			}
			req, err := Build(context.Background(), base, tc.op, args, tc.auth, "s3cret")
			if err != nil {
				t.Fatal(err)
			}
			got := built{URL: req.URL.String()}
			for k := range req.Header {
				if k == "Accept" {
					continue
				}
				if got.Headers == nil {
					got.Headers = map[string]string{}
				}
				got.Headers[k] = req.Header.Get(k)
			}
			if req.Body != nil {
				b, _ := io.ReadAll(req.Body)
				got.Body = string(b)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("request (-want +got):\n%s", d)
			}
		})
	}
}

// TestBuildRefuses: arguments that cannot make a valid request are refused
// with the argument named, and nothing is built.
func TestBuildRefuses(t *testing.T) {
	base, _ := url.Parse("https://api.example.test/v1")
	for _, tc := range []struct{ args, want string }{
		{`{}`, "argument path_id is required"},
		{`{"path_id":""}`, "cannot be empty"},
		{`{"path_id":".."}`, `".." is not a path parameter value`},
		{`{"path_id":{"a":{"b":1}}}`, "argument path_id: property a: expected a string"},
		{`{"path_id":"x","X-Trace":"a\r\nX-Evil: 1"}`, "line break"},
		{`{"path_id":"x","nope":1}`, "unknown argument nope"},
		{`{"path_id":"x","tags":[[1]]}`, "argument tags: item 0"},
	} {
		var args map[string]any
		if err := json.Unmarshal([]byte(tc.args), &args); err != nil {
			t.Fatal(err)
		}
		_, err := Build(context.Background(), base, echoOp(), args, nil, "")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// FuzzBuild: any arguments give a request to the base origin under the base
// path with no line break in a header, or an error.
func FuzzBuild(f *testing.F) {
	for _, s := range []string{`{"path_id":"x"}`, `{"path_id":"a/b","tags":["1"],"filter":{"a":"b"}}`, `{"path_id":"..","X-Trace":"\r\n"}`, `{"path_id":"%2e%2e","body":{"x":[1,2]}}`, `{"path_id":"//evil.test/x"}`, `{"path_id":"@evil.test"}`} {
		f.Add(s)
	}
	base, _ := url.Parse("https://api.example.test/v1")
	f.Fuzz(func(t *testing.T, s string) {
		var args map[string]any
		if json.Unmarshal([]byte(s), &args) != nil {
			return
		}
		for _, a := range []*Auth{nil, {Scheme: "apiKey", In: "header", Name: "K"}} {
			req, err := Build(context.Background(), base, echoOp(), args, a, "cred")
			if err != nil {
				if err.Error() == "" {
					t.Fatal("an empty error")
				}
				continue
			}
			if req.URL.Scheme != "https" || req.URL.Host != "api.example.test" || req.URL.User != nil {
				t.Fatalf("the request leaves the origin: %s", req.URL)
			}
			if !strings.HasPrefix(req.URL.EscapedPath(), "/v1/echo/") || strings.Count(req.URL.EscapedPath(), "/") != 3 {
				t.Fatalf("the path leaves its template: %s", req.URL.EscapedPath())
			}
			for k, vs := range req.Header {
				for _, v := range vs {
					if strings.ContainsAny(k+v, "\r\n") {
						t.Fatalf("a header holds a line break: %q: %q", k, v)
					}
				}
			}
		}
	})
}
