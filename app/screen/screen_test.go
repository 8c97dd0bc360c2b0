package screen

import "testing"

func TestValid(t *testing.T) {
	for s, want := range map[string]bool{
		"":                                  true,
		"review":                            true,
		Call("r0123456789abcdef0123", "c1"): true,
		Call("r01", "c3-in-flight"):         true,
		"approvals/r01":                     false,
		"approvals/r01/c1/x":                false,
		"approvals/r01/c1\"":                false,
		"approvals//c1":                     false,
		"approvals/r01/":                    false,
		"runs/r01":                          false,
		"nope":                              false,
		"approvals/r 1/c1":                  false,
	} {
		if got := Valid(s); got != want {
			t.Errorf("Valid(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestApprovals(t *testing.T) {
	for s, want := range map[string]bool{"": true, Call("r1", "c1"): true, "review": false, "runs": false} {
		if got := Approvals(s); got != want {
			t.Errorf("Approvals(%q) = %v, want %v", s, got, want)
		}
	}
}
