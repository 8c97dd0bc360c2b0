package index

// synonymGroups are words a person uses for what tool text says otherwise.
// A query word gains the other words of its groups at a reduced weight
// (params.syn). Kept small: each group earned its place on the evaluation
// queries (eval_test.go).
var synonymGroups = [][]string{
	{"ticket", "issue", "bug"},
	{"create", "add", "new", "open", "make", "remember"},
	{"delete", "remove", "erase", "destroy", "trash", "forget", "drop"},
	{"find", "search", "lookup", "locate"},
	{"get", "fetch", "retrieve", "read", "show", "view"},
	{"update", "edit", "modify", "change"},
	{"message", "chat", "post", "send"},
	{"repo", "repository"},
	{"pr", "pull"},
	{"comment", "reply"},
	{"user", "person", "people", "member", "teammate"},
	{"doc", "document", "page"},
	{"picture", "image", "screenshot", "photo", "capture"},
	{"website", "web", "site", "url", "browser"},
	{"folder", "directory"},
	{"place", "location", "address", "business"},
	{"route", "direction", "directions"},
	{"error", "exception", "crash", "failure"},
	{"db", "database"},
	{"remember", "memory", "observation"},
	{"ci", "build", "pipeline", "workflow"},
	{"favorite", "star"},
	{"tag", "label"},
	{"close", "resolve", "complete", "done"},
	{"org", "organization"},
	{"outage", "incident"},
	{"myself", "whoami", "authenticated", "logged", "login"},
	{"type", "fill", "enter"},
	{"credential", "secret", "leak", "leaked"},
	{"speed", "performance", "latency", "slow"},
	{"silence", "mute", "snooze"},
	{"sprint", "cycle", "iteration"},
	{"space", "storage", "size", "disk"},
	{"exception", "error", "event"},
	{"fact", "observation"},
	{"flaky", "intermittent", "intermittently"},
	{"snippet", "gist"},
}

// synonyms maps each term of the table to the terms of its other group
// members, analyzed like indexed text.
func synonyms(an *analyzer) map[string][]string {
	out := map[string][]string{}
	for _, g := range synonymGroups {
		var terms []string
		for _, w := range g {
			an.each(w, nil, func(t string) { terms = append(terms, t) })
		}
		for _, t := range terms {
			for _, u := range terms {
				if u != t && !contains(out[t], u) {
					out[t] = append(out[t], u)
				}
			}
		}
	}
	return out
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
