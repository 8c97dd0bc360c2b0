package run

import (
	"bytes"
	"encoding/json"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/sandbox"
	"github.com/capabilities-sh/capabilities/engine/scrub"
)

// Every value that enters the sandbox (a settled call's result or error,
// before it is journaled) and every value that leaves it (the result, logs
// and error of an attempt, a pending call's arguments, the envelope) goes
// through the run's scrubber (Tools.Scrubber). Upstream results are
// scrubbed by the hub already, but code can rebuild a secret from parts no
// scrubber can tell from data (two halves, escapes it decodes), so what
// leaves is scrubbed again, as parsed values: JSON through
// (*scrub.Scrubber).JSON, which decodes escaped strings.

// scrubText scrubs a string; one that is itself a JSON document (a log line
// of JSON.stringify, an error message holding JSON) is scrubbed as JSON
// too, so a secret behind its escapes is found.
func scrubText(sc *scrub.Scrubber, s string) string {
	s = sc.String(s)
	if t := bytes.TrimSpace([]byte(s)); len(t) > 1 && bytes.IndexByte(t, '\\') >= 0 && (t[0] == '{' || t[0] == '[' || t[0] == '"') && json.Valid(t) {
		if c := sc.JSON(t); !bytes.Equal(c, t) {
			return string(c)
		}
	}
	return s
}

func scrubTexts(sc *scrub.Scrubber, in []string) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = scrubText(sc, s)
	}
	return out
}

func scrubRunError(sc *scrub.Scrubber, e *model.RunError) *model.RunError {
	if e == nil {
		return nil
	}
	return &model.RunError{Code: e.Code, Message: scrubText(sc, e.Message), Hint: scrubText(sc, e.Hint)}
}

func scrubToolError(sc *scrub.Scrubber, e *model.ToolError) *model.ToolError {
	if e == nil {
		return nil
	}
	cp := *e
	cp.Message, cp.Hint = scrubText(sc, e.Message), scrubText(sc, e.Hint)
	return &cp
}

func scrubPending(sc *scrub.Scrubber, p model.Pending) model.Pending {
	p.Summary, p.Message = scrubText(sc, p.Summary), scrubText(sc, p.Message)
	if len(p.Args) > 0 {
		p.Args = sc.JSON(p.Args)
	}
	return p
}

// scrubOutcome scrubs what an attempt gives back: result, logs, error.
func scrubOutcome(sc *scrub.Scrubber, out sandbox.Outcome) sandbox.Outcome {
	if sc.Len() == 0 {
		return out
	}
	if len(out.Result) > 0 {
		out.Result = sc.JSON(out.Result)
	}
	out.Logs = scrubTexts(sc, out.Logs)
	if out.Error != nil {
		e := *out.Error
		e.Message, e.Hint = scrubText(sc, e.Message), scrubText(sc, e.Hint)
		e.Tool = nil // its message is in e.Message; nothing reads it after the attempt
		out.Error = &e
	}
	return out
}

// ScrubRun returns a copy of a run record with every secret sc knows
// replaced in its result, error, logs, notices and pending items.
func ScrubRun(sc *scrub.Scrubber, r *model.Run) *model.Run {
	if r == nil || sc.Len() == 0 {
		return r
	}
	cp := *r
	if len(r.Result) > 0 {
		cp.Result = sc.JSON(r.Result)
	}
	cp.Error = scrubRunError(sc, r.Error)
	cp.Logs = scrubTexts(sc, r.Logs)
	cp.Notices = scrubTexts(sc, r.Notices)
	if r.Pending != nil {
		cp.Pending = make([]model.Pending, len(r.Pending))
		for i, p := range r.Pending {
			cp.Pending[i] = scrubPending(sc, p)
		}
	}
	return &cp
}

// ScrubJournal returns a copy of journal entries with every secret sc
// knows replaced in their values and errors.
func ScrubJournal(sc *scrub.Scrubber, journal []model.JournalEntry) []model.JournalEntry {
	if sc.Len() == 0 {
		return journal
	}
	out := make([]model.JournalEntry, len(journal))
	for i, je := range journal {
		if len(je.Value) > 0 {
			je.Value = sc.JSON(je.Value)
		}
		je.Error = scrubToolError(sc, je.Error)
		out[i] = je
	}
	return out
}

// Scrubbed returns a copy of the envelope with every secret sc knows
// replaced: the result and pending arguments as JSON values, the error,
// logs, notices and pending texts as text. It returns env itself when sc
// knows no secret.
func (env *Envelope) Scrubbed(sc *scrub.Scrubber) *Envelope {
	if env == nil || sc.Len() == 0 {
		return env
	}
	cp := *env
	if len(env.Result) > 0 {
		cp.Result = sc.JSON(env.Result)
	}
	cp.Error = scrubRunError(sc, env.Error)
	cp.Logs = scrubTexts(sc, env.Logs)
	cp.Notices = scrubTexts(sc, env.Notices)
	cp.Pending = make([]PendingInfo, len(env.Pending))
	for i, p := range env.Pending {
		p.Summary, p.Message = scrubText(sc, p.Summary), scrubText(sc, p.Message)
		if len(p.Args) > 0 {
			p.Args = sc.JSON(p.Args)
		}
		cp.Pending[i] = p
	}
	return &cp
}
