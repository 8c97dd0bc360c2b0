package authserver_test

import (
	"context"
	"testing"
)

// BenchmarkVerify is the cost of validating an access token on each MCP
// request (hash, in-memory store lookup, checks); a PostgreSQL store adds
// one indexed read.
func BenchmarkVerify(b *testing.B) {
	e := newEnv(b)
	_, tok := e.grant(b, "alice")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.as.Verify(ctx, tok.AccessToken, e.resource()); err != nil {
			b.Fatal(err)
		}
	}
}
