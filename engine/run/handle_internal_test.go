package run

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestJSONPath: the supported steps (.name, ['name'], ["name"], [index])
// reach the value; anything else is refused with what is wrong.
func TestJSONPath(t *testing.T) {
	doc := `{"items":[{"id":1,"tags":["a","b"]},{"id":2,"a.b":{"c":null}}],"n":3}`
	tests := []struct{ path, want, err string }{
		{path: "$", want: doc},
		{path: "$.n", want: "3"},
		{path: "$.items[1].id", want: "2"},
		{path: "$.items[0].tags[1]", want: `"b"`},
		{path: `$.items[1]['a.b']["c"]`, want: "null"},
		{path: " $['items'][0] ", want: `{"id":1,"tags":["a","b"]}`},
		{path: "items", err: "must start with $"},
		{path: "$.items[2]", err: "has 2 items, no [2]"},
		{path: "$.nope", err: `has no key "nope"`},
		{path: "$.n.x", err: "$.n is not an object"},
		{path: "$.items[*]", err: "wildcards and filters are not supported"},
		{path: "$.items[0", err: "is not closed"},
		{path: "$..n", err: "a name is missing"},
	}
	for _, tt := range tests {
		got, err := jsonPath(doc, tt.path)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: err %v, want %q", tt.path, err, tt.err)
			}
			continue
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("%s = %s, %v; want %s", tt.path, got, err, tt.want)
		}
	}
}

// TestCutRunes: slices never split a character, and consecutive slices
// put together are the whole text, whatever the slice length.
func TestCutRunes(t *testing.T) {
	text := strings.Repeat("aé€😀", 50)
	for n := 1; n <= 9; n++ {
		var parts []string
		for off := 0; off < len(text); off += n {
			parts = append(parts, cutRunes(text, off, n))
		}
		if diff := cmp.Diff(text, strings.Join(parts, "")); diff != "" {
			t.Fatalf("length %d: %s", n, diff)
		}
		for _, p := range parts {
			if strings.ToValidUTF8(p, "?") != p {
				t.Fatalf("length %d: a slice splits a character: %q", n, p)
			}
		}
	}
	if got := cutRunes("abc", 10, 5); got != "" {
		t.Errorf("past the end: %q", got)
	}
}
