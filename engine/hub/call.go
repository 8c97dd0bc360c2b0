package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/policy"
	"github.com/capabilities-sh/capabilities/engine/scrub"
	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Call validates args against the tool's input schema and calls the tool on
// its upstream through a connection ("" for the default), starting the
// upstream if needed. Every secret value is scrubbed from the result.
//
// It is a person's own call (capabilities hub call): nothing asks, but a
// deny rule holds here too, since any matching deny wins (ErrDenied).
func (h *Hub) Call(ctx context.Context, address string, args json.RawMessage, conn string) (*mcp.CallToolResult, error) {
	src, t, m, err := h.Tool(ctx, address)
	if err != nil {
		return nil, fmt.Errorf("calling: %w", err)
	}
	v, err := h.Verdict(ctx, t, conn)
	if err != nil {
		return nil, fmt.Errorf("calling %s: %w", address, err)
	}
	if v.Action == policy.Deny {
		lift := "capabilities hub policy remove " + v.Rule.Target
		if v.Rule.Connection != "" {
			lift += " --connection " + v.Rule.Connection
		}
		return nil, fmt.Errorf("calling %s: %w: %s; remove the rule (`%s`) to call it", address, ErrDenied, v.Message, lift)
	}
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	if err := ValidateArgs(t, args); err != nil {
		return nil, fmt.Errorf("calling %s: %w", address, err)
	}
	cred, err := h.credential(ctx, src, conn)
	if err == nil && cred == nil && t.Secured {
		err = missingCredential(src.Namespace, conn)
	}
	if err == nil {
		err = readyToken(ctx, src.Namespace, cred)
	}
	if err != nil {
		return nil, fmt.Errorf("calling %s: %w", address, err)
	}
	s, err := h.pool.Session(ctx, *src, m.Protocol, cred)
	if ce := signInError(src.Namespace, cred, err); err != nil && ce != nil {
		return nil, fmt.Errorf("calling %s: %w", address, ce)
	}
	if err != nil {
		return nil, h.scrubErr(fmt.Errorf("calling %s: %w", address, err), ErrUpstreamUnavailable)
	}
	res, err := s.CallTool(ctx, t.Name, args)
	h.knowEveryCredential(ctx)
	if ce := signInError(src.Namespace, cred, err); err != nil && ce != nil {
		return nil, fmt.Errorf("calling %s: %w", address, ce)
	}
	var te *source.TimeoutError
	if errors.As(err, &te) {
		return nil, &scrubbedError{msg: fmt.Sprintf("calling %s: %s; a slow tool gets more time with `capabilities hub add --call-timeout` or CAPABILITIES_CALL_TIMEOUT", address, timeoutText(te)), err: te}
	}
	if err != nil {
		return nil, h.scrubErr(err, nil)
	}
	return h.scrubResult(res), nil
}

// missingCredential is the error of a call to an operation that requires
// the source's credential when the source has none.
func missingCredential(ns, conn string) *ConnectionError {
	if conn == "" {
		conn = DefaultConnection
	}
	return &ConnectionError{Namespace: ns, Connection: conn}
}

// scrubResult removes secrets from a tool result: its texts and structured
// content field by field (scrubTexts), anything else through its JSON. A
// text that is itself a JSON document reaches the code parsed (resultValue), its
// escapes decoded there, so it is scrubbed as JSON too. A result that
// cannot be re-read after scrubbing is withheld.
func (h *Hub) scrubResult(res *mcp.CallToolResult) *mcp.CallToolResult {
	return scrubResult(h.scrubber(), res)
}

func scrubResult(sc *scrub.Scrubber, res *mcp.CallToolResult) *mcp.CallToolResult {
	if sc.Len() == 0 {
		return res
	}
	withheld := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: sc.Marker()}}}
	out, ok := scrubTexts(sc, res)
	if !ok {
		b, err := json.Marshal(res)
		if err != nil {
			return withheld
		}
		out = res
		if clean := sc.JSON(b); string(clean) != string(b) {
			out = &mcp.CallToolResult{}
			if err := json.Unmarshal(clean, out); err != nil {
				return withheld
			}
		}
	}
	for i, c := range out.Content {
		tc, ok := c.(*mcp.TextContent)
		if !ok {
			continue
		}
		t := strings.TrimSpace(tc.Text)
		if !strings.Contains(t, `\`) || (!strings.HasPrefix(t, "{") && !strings.HasPrefix(t, "[")) || !json.Valid([]byte(t)) {
			continue
		}
		clean := sc.JSON(json.RawMessage(t))
		if string(clean) == t {
			continue
		}
		out = owned(out, res)
		ntc := *tc
		ntc.Text = string(clean)
		out.Content[i] = &ntc
	}
	return out
}

// owned returns out, or a copy of it (its content list too) when it is the
// upstream's res, which scrubbing never changes in place.
func owned(out, res *mcp.CallToolResult) *mcp.CallToolResult {
	if out != res {
		return out
	}
	cp := *res
	cp.Content = slices.Clone(res.Content)
	return &cp
}

// ValidateArgs checks args (a JSON object) against the tool's input schema.
// Errors name the offending field. A schema the validator cannot use is not
// held against the caller: the upstream validates too.
func ValidateArgs(t *model.Tool, args json.RawMessage) error {
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return fmt.Errorf("the arguments are not valid JSON: %w", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return fmt.Errorf("the arguments must be a JSON object like {\"name\": value}, not %s", model.JSONKind(v))
	}
	return validate(t, v, resolveSchema(t))
}

// resolveSchema prepares a tool's input schema for validation; nil when
// there is none or the validator cannot use it (the upstream validates too).
func resolveSchema(t *model.Tool) *jsonschema.Resolved {
	if len(t.InputSchema) == 0 {
		return nil
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(t.InputSchema, &s); err != nil {
		return nil
	}
	rs, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: false})
	if err != nil {
		return nil
	}
	return rs
}

// validateArgs is ValidateArgs with the schema resolved once per contract.
func (c *catalog) validateArgs(t *model.Tool, args json.RawMessage) error {
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return fmt.Errorf("the arguments are not valid JSON: %w", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return fmt.Errorf("the arguments must be a JSON object like {\"name\": value}, not %s", model.JSONKind(v))
	}
	return validate(t, v, c.schema(t))
}

func validate(t *model.Tool, v any, rs *jsonschema.Resolved) error {
	if rs == nil {
		return nil
	}
	if err := rs.Validate(v); err != nil {
		return fmt.Errorf("invalid arguments for %s: %s (see `capabilities hub describe %s`)", t.Address, cleanValidation(err), t.Address)
	}
	return nil
}

// cleanValidation rewrites the validator's message as "field <path>:
// <reason>", the path in the instance's terms (entities[].name).
func cleanValidation(err error) string {
	msg := err.Error()
	i := strings.LastIndex(msg, "validating /")
	if i < 0 {
		return strings.TrimPrefix(msg, "validating root: ")
	}
	rest := msg[i+len("validating /"):]
	path, reason, ok := strings.Cut(rest, ": ")
	if !ok {
		return msg
	}
	var b strings.Builder
	segs := strings.Split(path, "/")
	for j := 0; j < len(segs); j++ {
		switch segs[j] {
		case "properties":
			if j+1 < len(segs) {
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(segs[j+1])
				j++
			}
		case "items", "prefixItems":
			b.WriteString("[]")
		}
	}
	reason = typeReason(reason)
	if b.Len() == 0 {
		return reason
	}
	return "field " + b.String() + ": " + reason
}

// typeMismatch is the validator's words for a value of the wrong JSON type
// (the value itself printed as Go prints it).
var typeMismatch = regexp.MustCompile(`^type: .* has type "(\w+)", want (one of )?"([\w, ]+)"$`)

// typeReason says a type mismatch in a person's words: "want a string, got
// an integer".
func typeReason(reason string) string {
	m := typeMismatch.FindStringSubmatch(reason)
	if m == nil {
		return reason
	}
	if m[2] != "" {
		return fmt.Sprintf("want one of %s; got %s", m[3], aType(m[1]))
	}
	return fmt.Sprintf("want %s, got %s", aType(m[3]), aType(m[1]))
}

// aType names a JSON type with its article.
func aType(t string) string {
	switch t {
	case "null":
		return "null"
	case "integer", "object", "array":
		return "an " + t
	}
	return "a " + t
}

// scrubTexts scrubs a result made only of plain text contents, and
// structured content, field by field: what scrubbing its whole JSON does
// (a JSON string is scrubbed as the text it decodes to), without
// marshaling it, which cost about ten times a large result's size. ok is
// false for any other result (images, resources, metadata, annotations):
// scrubResult then goes through its JSON.
func scrubTexts(sc *scrub.Scrubber, res *mcp.CallToolResult) (_ *mcp.CallToolResult, ok bool) {
	if res.Meta != nil {
		return nil, false
	}
	for _, c := range res.Content {
		tc, isText := c.(*mcp.TextContent)
		if !isText || tc.Meta != nil || tc.Annotations != nil {
			return nil, false
		}
	}
	out := res
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, false
		}
		if clean := sc.JSON(b); string(clean) != string(b) {
			var v any
			if err := json.Unmarshal(clean, &v); err != nil {
				return nil, false
			}
			out = owned(out, res)
			out.StructuredContent = v
		}
	}
	for i, c := range res.Content {
		tc := c.(*mcp.TextContent)
		if clean := sc.String(tc.Text); clean != tc.Text {
			out = owned(out, res)
			ntc := *tc
			ntc.Text = clean
			out.Content[i] = &ntc
		}
	}
	return out, true
}
