// Package screen names the console's screens as the desktop app asks its
// window (or the browser) to show them: the fragment of the console's
// address. Both the app and its window process read these names.
package screen

import "strings"

// Names are the screens: "" (the pending calls), "review", "runs",
// "sources", "settings".
var Names = map[string]bool{"": true, "review": true, "runs": true, "sources": true, "settings": true}

// Call is the screen of one pending call: the pending calls with that one
// open, whatever else waits (a notification or tray item the person picked
// opens the call they picked, not the oldest).
func Call(run, id string) string { return "approvals/" + run + "/" + id }

// Approvals says whether s shows the pending calls: "" or a Call screen.
func Approvals(s string) bool { return s == "" || strings.HasPrefix(s, "approvals/") }

// Valid says whether s is one of Names or a Call screen.
func Valid(s string) bool {
	if Names[s] {
		return true
	}
	rest, ok := strings.CutPrefix(s, "approvals/")
	run, id, ok2 := strings.Cut(rest, "/")
	return ok && ok2 && word(run) && word(id)
}

// word: a run or call id, letters, digits and '-' (r0123abcd…, c1,
// c3-in-flight).
func word(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
