package index

import (
	"github.com/capabilities-sh/capabilities/engine/model"
)

// The action-class signal: what the query wants done against what the tool
// does. A tool's class comes from its name's verb ("deleteObservations",
// "actionsRunTrigger", an OpenAPI tool's "GET /path" or operationId),
// checked against its annotations (a read-only tool reads, whatever its
// name says) and, for a name without a verb, from the annotations alone:
// an OpenAPI operation's are set by its method (GET read-only, DELETE
// destructive and idempotent, PUT idempotent, POST neither). A query's
// class comes from its first action word or phrase ("forget" → delete,
// "kick off" → run, "bring up to date" → update) or, when it opens with a
// question word ("what", "who", "which"), is a read (actionwords.go). A
// tool whose class matches the query's has its score raised, one whose
// class clashes (a read for a delete) lowered; a query or tool without a
// class is left as it is.

// action is an action class.
type action uint8

const (
	actNone action = iota
	actRead
	actList
	actCreate
	actUpdate
	actDelete
	actRun
	actSend
	numActions
)

var actionNames = [numActions]string{"", "read", "list", "create", "update", "delete", "run", "send"}

func (a action) String() string { return actionNames[a] }

// affinity is how a tool's class stands to the query's.
type affinity uint8

const (
	affNeutral affinity = iota
	affMatch            // the same class
	affNear             // a neighbour: read and list, create and send
	affClash            // what the query does not want: a read for a delete
	numAffinities
)

// affinities[query][tool]; unlisted pairs are neutral.
var affinities = func() (t [numActions][numActions]affinity) {
	for a := actRead; a < numActions; a++ {
		t[a][a] = affMatch
	}
	near := func(a, b action) { t[a][b], t[b][a] = affNear, affNear }
	near(actRead, actList)
	near(actCreate, actSend)
	clash := func(q action, tools ...action) {
		for _, x := range tools {
			t[q][x] = affClash
		}
	}
	clash(actRead, actCreate, actUpdate, actDelete, actSend)
	clash(actList, actCreate, actUpdate, actDelete, actSend)
	// Not a read: a read-only tool may compute what a query asks to make
	// ("add two numbers": everything.getSum).
	clash(actCreate, actList, actDelete)
	clash(actUpdate, actRead, actList, actCreate)
	clash(actDelete, actRead, actList, actCreate, actSend)
	clash(actRun, actDelete, actRead, actList)
	clash(actSend, actRead, actList, actDelete)
	return t
}()

// phrase is a run of stemmed words and the class it gives.
type phrase struct {
	words []string
	act   action
}

// actionTable finds phrases by their first word, longest first.
type actionTable map[string][]phrase

func (t actionTable) add(p string, a action) {
	ws := stemWords(p)
	if len(ws) == 0 {
		return
	}
	ps := append(t[ws[0]], phrase{ws, a})
	for i := len(ps) - 1; i > 0 && len(ps[i].words) > len(ps[i-1].words); i-- {
		ps[i], ps[i-1] = ps[i-1], ps[i]
	}
	t[ws[0]] = ps
}

// at returns the phrase of t that words[i:] begins with.
func (t actionTable) at(words []string, i int) (phrase, bool) {
	for _, p := range t[words[i]] {
		if i+len(p.words) <= len(words) && slicesEqual(words[i:i+len(p.words)], p.words) {
			return p, true
		}
	}
	return phrase{}, false
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

var (
	queryTable, toolTable, fillerTable, questionTable = actionTables()
	sendNounSet                                       = map[string]bool{}
)

func actionTables() (q, tl, fill, question actionTable) {
	q, tl, fill, question = actionTable{}, actionTable{}, actionTable{}, actionTable{}
	for a, ws := range queryActions {
		for _, w := range ws {
			q.add(w, a)
		}
	}
	for a, ws := range toolActions {
		for _, w := range ws {
			tl.add(w, a)
		}
	}
	for _, w := range queryNotActions {
		q.add(w, actNone)
	}
	for _, w := range queryFillers {
		fill.add(w, actNone)
	}
	for _, w := range queryQuestions {
		question.add(w, actRead)
	}
	return q, tl, fill, question
}

func init() {
	for _, w := range sendNouns {
		for _, s := range stemWords(w) {
			sendNounSet[s] = true
		}
	}
}

// stemWords splits s into lower-case words at every byte that is not a
// letter or a digit and at camelCase humps, and stems each (no stop words
// are dropped: "what" and "up" carry the action).
func stemWords(s string) []string {
	var out []string
	an := actionAnalyzer
	an.each(s, nil, func(term string) { out = append(out, term) })
	return out
}

// actionAnalyzer splits and stems like the index, keeping stop words.
var actionAnalyzer = func() *analyzer {
	a := newAnalyzer(true, true, false)
	a.shared = true
	return a
}()

// queryAction is the class of what a query asks for, actNone when it
// does not say (or says it is no action: queryNotActions).
func queryAction(text string) action {
	words := stemWords(text)
	i := 0
	for i < len(words) {
		p, ok := fillerTable.at(words, i)
		if !ok {
			break
		}
		i += len(p.words)
	}
	if i < len(words) {
		if _, ok := questionTable.at(words, i); ok {
			return actRead
		}
	}
	for ; i < len(words); i++ {
		if p, ok := queryTable.at(words, i); ok {
			return p.act
		}
	}
	return actNone
}

// toolAction is the class of what a tool does.
func toolAction(t *model.Tool) action {
	words := stemWords(t.Name)
	first, read := actNone, actNone
	for i := range words {
		p, ok := toolTable.at(words, i)
		if !ok {
			continue
		}
		if first == actNone {
			first = p.act
		}
		if read == actNone && (p.act == actRead || p.act == actList) {
			read = p.act
		}
	}
	a := t.Annotations
	hint := func(h *bool) (set, v bool) { return h != nil, h != nil && *h }
	roSet, ro := false, false
	if a != nil {
		roSet, ro = hint(a.ReadOnlyHint)
	}
	switch {
	case roSet && ro:
		if read != actNone {
			return read
		}
		return actRead
	case first == actCreate:
		for _, w := range words {
			if sendNounSet[w] {
				return actSend
			}
		}
		return first
	case first != actNone:
		return first
	case a == nil || !roSet:
		return actNone
	}
	// A name without a verb, not read-only: the other hints (an OpenAPI
	// operation's method).
	dSet, d := hint(a.DestructiveHint)
	iSet, idem := hint(a.IdempotentHint)
	switch {
	case !dSet || !iSet:
		return actNone
	case d && idem:
		return actDelete
	case !d && idem:
		return actUpdate
	case !d && !idem:
		return actCreate
	}
	return actNone
}

// actionFactors are the score factors by query class and tool class.
func actionFactors(p *params) (f [numActions][numActions]float32) {
	w := [numAffinities]float32{affNeutral: 1, affMatch: 1 + p.actMatch, affNear: 1 + p.actNear, affClash: 1 - p.actClash}
	for q := range numActions {
		for t := range numActions {
			f[q][t] = w[affinities[q][t]]
		}
	}
	return f
}
