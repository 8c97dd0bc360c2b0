package hub

import "testing"

// The validator's type mismatches read as what is wanted and what came;
// its other reasons pass unchanged.
func TestTypeReason(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`type: 1 has type "integer", want "string"`, "want a string, got an integer"},
		{`type: map[a:1] has type "object", want "array"`, "want an array, got an object"},
		{`type: <nil> has type "null", want "boolean"`, "want a boolean, got null"},
		{`type: x has type "string", want one of "number, null"`, "want one of number, null; got a string"},
		{`minimum: 0 is less than 1`, `minimum: 0 is less than 1`},
	} {
		if got := typeReason(c.in); got != c.want {
			t.Errorf("typeReason(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
