package openapi

import (
	"context"
	"os"
	"testing"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// BenchmarkGitHubDescription: GitHub's REST description (about 12 MB of
// JSON, 1,222 operations) parsed, resolved and turned into tools (New),
// and the parse alone (Parse).
func BenchmarkGitHubDescription(b *testing.B) {
	path := testenv.LargeNPMPath(b, "@octokit/openapi/generated/api.github.com.json")
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.Run("parse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Parse(ctx, data, path); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("new", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := New(ctx, data, path, ""); err != nil {
				b.Fatal(err)
			}
		}
	})
}
