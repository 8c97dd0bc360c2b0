package hub

import "testing"

// A replaced line reads as it does in any diff: what went, then what came.
func TestLineDiffPutsTheRemovedLineFirst(t *testing.T) {
	for _, tc := range []struct{ a, b, want string }{
		{"a\nold\nz", "a\nnew\nz", "  - old\n  + new"},
		{"a", "a\nadded", "  + added"},
		{"a\ngone", "a", "  - gone"},
	} {
		if got := lineDiff(tc.a, tc.b); got != tc.want {
			t.Errorf("lineDiff(%q, %q) = %q, want %q", tc.a, tc.b, got, tc.want)
		}
	}
}
