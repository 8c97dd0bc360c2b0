package openapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/getkin/kin-openapi/openapi3"
)

// Param is one parameter of an operation and the input property that
// carries it.
type Param struct {
	Name     string // as the API names it
	In       string // path, query, header or cookie
	Key      string // the property of the tool's input
	Style    string
	Explode  bool
	Required bool
}

// Operation is one operation of the document, ready to call.
type Operation struct {
	Name   string // the tool's upstream name: operationId, else "METHOD /path"
	Method string
	Path   string // the template, /pets/{petId}
	Params []Param
	// BodyKey is the input property carrying the request body ("" for
	// none), sent as BodyType.
	BodyKey  string
	BodyType string
	// FileFields are the fields of a multipart body that are files (a
	// binary string in the document): each takes a FileArg, or a list of
	// them when the field is an array.
	FileFields map[string]bool
	// Secured: the operation requires the document's security scheme.
	Secured bool
	// Warning says what the hub could not read of the operation (no 2xx
	// answer described), shown when the source is added.
	Warning string
	Tool    model.UpstreamTool
}

// Auth is how a credential is sent: the document's first security scheme
// the hub supports.
type Auth struct {
	Scheme string `json:"scheme"` // apiKey, bearer, basic or oauth2 (an access token sent as bearer)
	In     string `json:"in,omitempty"`
	Name   string `json:"name,omitempty"` // the header, query parameter or cookie
	ID     string `json:"id,omitempty"`   // the scheme's name in the document
}

// OAuth2 is an oauth2 (or openIdConnect) security scheme of the document:
// where a sign-in goes (`hub auth`, engine/oauth): its authorization and
// token endpoints and scopes, or the OpenID Connect discovery URL. When such
// a scheme is the one chosen (Auth.Scheme "oauth2"), the operations that
// require it are Secured and the access token goes as a bearer token.
type OAuth2 struct {
	ID               string   `json:"id"` // the scheme's name in the document
	Flow             string   `json:"flow,omitempty"`
	AuthorizationURL string   `json:"authorizationUrl,omitempty"`
	TokenURL         string   `json:"tokenUrl,omitempty"`
	RefreshURL       string   `json:"refreshUrl,omitempty"`
	Scopes           []string `json:"scopes,omitempty"`
	OpenIDConnectURL string   `json:"openIdConnectUrl,omitempty"`
}

// oauth2Schemes lists the document's oauth2 and openIdConnect schemes, one
// per flow (authorization code first), in name order.
func oauth2Schemes(doc *openapi3.T) []OAuth2 {
	if doc.Components == nil {
		return nil
	}
	var out []OAuth2
	for _, n := range sortedKeys(doc.Components.SecuritySchemes) {
		ref := doc.Components.SecuritySchemes[n]
		if ref == nil || ref.Value == nil {
			continue
		}
		s := ref.Value
		switch s.Type {
		case "openIdConnect":
			out = append(out, OAuth2{ID: n, OpenIDConnectURL: s.OpenIdConnectUrl})
		case "oauth2":
			if s.Flows == nil {
				continue
			}
			for _, f := range []struct {
				name string
				flow *openapi3.OAuthFlow
			}{{"authorizationCode", s.Flows.AuthorizationCode}, {"clientCredentials", s.Flows.ClientCredentials}, {"implicit", s.Flows.Implicit}, {"password", s.Flows.Password}} {
				if f.flow == nil {
					continue
				}
				out = append(out, OAuth2{ID: n, Flow: f.name, AuthorizationURL: f.flow.AuthorizationURL, TokenURL: f.flow.TokenURL, RefreshURL: f.flow.RefreshURL, Scopes: sortedKeys(f.flow.Scopes)})
			}
		}
	}
	return out
}

var methods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions, http.MethodTrace}

// Operations lists the document's operations in path order, then method
// order, each with its tool. A schema that refers to itself or a reference
// the hub cannot follow is an error naming the operation: nothing of the
// document is used then. An operation with no 2xx answer described (common:
// Swagger's own Petstore) is kept, with no output schema and a Warning.
//
// An operation the hub cannot call (a body it cannot send) is left out;
// skipped says which and why. The operations are converted on every core,
// sharing the schemas converted so far.
func Operations(doc *openapi3.T) (ops []Operation, auth *Auth, skipped []string, err error) {
	auth = chooseAuth(doc)
	type job struct {
		path, method string
		item         *openapi3.PathItem
		op           *openapi3.Operation
	}
	var jobs []job
	paths := doc.Paths.Keys()
	sort.Strings(paths)
	for _, path := range paths {
		item := doc.Paths.Value(path)
		if item == nil {
			continue
		}
		byMethod := item.Operations()
		for _, m := range methods {
			if op := byMethod[m]; op != nil {
				jobs = append(jobs, job{path, m, item, op})
			}
		}
	}
	results := make([]Operation, len(jobs))
	errs := make([]error, len(jobs))
	done := &sync.Map{}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(jobs)) {
		wg.Go(func() {
			conv := &converter{doc: doc, done: done}
			for {
				i := int(next.Add(1) - 1)
				if i >= len(jobs) {
					return
				}
				j := jobs[i]
				results[i], errs[i] = operation(conv, doc, auth, j.path, j.method, j.item, j.op)
			}
		})
	}
	wg.Wait()
	for i, j := range jobs {
		err := errs[i]
		var ue *unsupportedError
		if errors.As(err, &ue) {
			skipped = append(skipped, fmt.Sprintf("%s %s: %v", j.method, j.path, err))
			continue
		}
		if err != nil {
			return nil, nil, nil, fmt.Errorf("operation %s %s: %w", j.method, j.path, err)
		}
		ops = append(ops, results[i])
	}
	if len(ops) == 0 {
		if len(skipped) > 0 {
			return nil, nil, nil, fmt.Errorf("the hub can call none of the document's operations: %s", strings.Join(skipped, "; "))
		}
		return nil, nil, nil, fmt.Errorf("the document has no operations")
	}
	return ops, auth, skipped, nil
}

// unsupportedError is an operation the hub cannot call; the rest of the
// document is still used.
type unsupportedError struct{ msg string }

func (e *unsupportedError) Error() string { return e.msg }

func chooseAuth(doc *openapi3.T) *Auth {
	if doc.Components == nil {
		return nil
	}
	names := make([]string, 0, len(doc.Components.SecuritySchemes))
	for n := range doc.Components.SecuritySchemes {
		names = append(names, n)
	}
	sort.Strings(names)
	// The schemes the document requires first, in the order it lists them.
	var order []string
	for _, req := range doc.Security {
		for n := range req {
			order = append(order, n)
		}
	}
	sort.Strings(order)
	order = append(order, names...)
	for _, n := range order {
		ref := doc.Components.SecuritySchemes[n]
		if ref == nil || ref.Value == nil {
			continue
		}
		s := ref.Value
		switch {
		case s.Type == "apiKey" && (s.In == "header" || s.In == "query" || s.In == "cookie") && s.Name != "":
			return &Auth{Scheme: "apiKey", In: s.In, Name: s.Name, ID: n}
		case s.Type == "http" && strings.EqualFold(s.Scheme, "bearer"):
			return &Auth{Scheme: "bearer", ID: n}
		case s.Type == "http" && strings.EqualFold(s.Scheme, "basic"):
			return &Auth{Scheme: "basic", ID: n}
		case s.Type == "oauth2" && s.Flows != nil && s.Flows.AuthorizationCode != nil, s.Type == "openIdConnect" && s.OpenIdConnectUrl != "":
			return &Auth{Scheme: "oauth2", ID: n}
		}
	}
	return nil
}

// secured reports whether the operation asks for the chosen scheme (its
// own security, else the document's).
func secured(doc *openapi3.T, op *openapi3.Operation, auth *Auth) bool {
	if auth == nil {
		return false
	}
	reqs := doc.Security
	if op.Security != nil {
		reqs = *op.Security
	}
	for _, r := range reqs {
		if _, ok := r[auth.ID]; ok {
			return true
		}
	}
	return false
}

func operation(conv *converter, doc *openapi3.T, auth *Auth, path, method string, item *openapi3.PathItem, op *openapi3.Operation) (Operation, error) {
	o := Operation{Method: method, Path: path, Secured: secured(doc, op, auth)}
	o.Name = op.OperationID
	if o.Name == "" {
		o.Name = method + " " + path
	}
	// Path-level parameters, overridden by the operation's own.
	var params []*openapi3.Parameter
	seen := map[string]int{}
	for _, list := range []openapi3.Parameters{item.Parameters, op.Parameters} {
		for _, pr := range list {
			if pr == nil || pr.Value == nil {
				return o, fmt.Errorf("a parameter reference %q could not be resolved", refOf(pr))
			}
			p := pr.Value
			k := p.In + "\x00" + p.Name
			if i, ok := seen[k]; ok {
				params[i] = p
				continue
			}
			seen[k] = len(params)
			params = append(params, p)
		}
	}
	// Input property names: a parameter's own name unless two parameters
	// share it (in different places), then "<in>_<name>" for each. The
	// body is "body" ("requestBody" when a parameter is named body).
	count := map[string]int{}
	for _, p := range params {
		count[p.Name]++
	}
	props := map[string]any{}
	var required []string
	for _, p := range params {
		if p.In == openapi3.ParameterInHeader && (strings.EqualFold(p.Name, "Accept") || strings.EqualFold(p.Name, "Content-Type") || strings.EqualFold(p.Name, "Authorization")) {
			continue // set by the hub (OpenAPI says these are ignored)
		}
		key := p.Name
		if count[p.Name] > 1 {
			key = p.In + "_" + p.Name
		}
		style, explode := paramStyle(p)
		o.Params = append(o.Params, Param{Name: p.Name, In: p.In, Key: key, Style: style, Explode: explode, Required: p.Required || p.In == openapi3.ParameterInPath})
		var s any = map[string]any{}
		if p.Schema != nil {
			v, err := conv.schema(p.Schema)
			if err != nil {
				return o, fmt.Errorf("parameter %s: %w", p.Name, err)
			}
			s = v
		} else if mt := firstMedia(p.Content); mt != nil && mt.Schema != nil {
			v, err := conv.schema(mt.Schema)
			if err != nil {
				return o, fmt.Errorf("parameter %s: %w", p.Name, err)
			}
			s = v
		}
		s = withDescription(s, strings.TrimSpace(p.Description+" ("+p.In+" parameter)"))
		props[key] = s
		if p.Required || p.In == openapi3.ParameterInPath {
			required = append(required, key)
		}
	}
	if rb := op.RequestBody; rb != nil {
		if rb.Value == nil {
			return o, fmt.Errorf("the request body reference %q could not be resolved", rb.Ref)
		}
		ct, mt := bodyMedia(rb.Value.Content)
		if mt == nil {
			return o, &unsupportedError{fmt.Sprintf("left out: its request body is sent only as %s; the hub sends JSON, form, multipart, text or octet-stream bodies", strings.Join(sortedKeys(rb.Value.Content), ", "))}
		}
		o.BodyKey, o.BodyType = "body", ct
		if count["body"] > 0 {
			o.BodyKey = "requestBody"
		}
		var s any = map[string]any{}
		if mt.Schema != nil {
			v, err := conv.schema(mt.Schema)
			if err != nil {
				return o, fmt.Errorf("request body: %w", err)
			}
			s = v
		}
		sentAs := "sent as " + ct
		switch ct {
		case "multipart/form-data":
			s, o.FileFields = multipartSchema(s)
			if len(o.FileFields) > 0 {
				sentAs += "; a file field takes {name, content} with the file's text, or {name, contentBase64} with its bytes in base64, and optionally its media type as type"
			}
		case "application/octet-stream":
			s = octetSchema
			sentAs = "sent as application/octet-stream: a string (sent as its UTF-8 bytes), or {contentBase64} with the bytes in base64"
		}
		s = withDescription(s, strings.TrimSpace(rb.Value.Description+" (request body, "+sentAs+")"))
		props[o.BodyKey] = s
		if rb.Value.Required {
			required = append(required, o.BodyKey)
		}
	}
	in := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		in["required"] = required
	}
	var out any
	if op.Responses != nil {
		found := false
		for _, code := range op.Responses.Keys() {
			if !(len(code) == 3 && code[0] == '2') && code != "2XX" && code != "2xx" {
				continue
			}
			found = true
			r := op.Responses.Value(code)
			if r == nil || r.Value == nil {
				return o, fmt.Errorf("the response reference for %s could not be resolved", code)
			}
			if _, mt := jsonMedia(r.Value.Content); mt != nil && mt.Schema != nil {
				v, err := conv.schema(mt.Schema)
				if err != nil {
					return o, fmt.Errorf("response %s: %w", code, err)
				}
				out = v
			}
			break
		}
		if !found {
			o.Warning = "no 2xx answer is described: the tool has no output schema"
		}
	}
	desc := strings.TrimSpace(op.Summary)
	if d := strings.TrimSpace(op.Description); d != "" && d != desc {
		if desc != "" {
			desc += "\n\n"
		}
		desc += d
	}
	if desc != "" {
		desc += "\n\n"
	}
	desc += "HTTP " + method + " " + path
	if o.Warning != "" {
		desc += " (the document describes no success answer)"
	}
	o.Tool = model.UpstreamTool{Name: o.Name, Description: desc, Annotations: annotations(method), Secured: o.Secured}
	var err error
	if o.Tool.InputSchema, err = json.Marshal(in); err != nil {
		return o, fmt.Errorf("encoding the input schema: %w", err)
	}
	// An MCP output schema is an object; an array or scalar answer is
	// described in words only.
	if m, ok := out.(map[string]any); ok && m["type"] == "object" {
		if o.Tool.OutputSchema, err = json.Marshal(out); err != nil {
			return o, fmt.Errorf("encoding the output schema: %w", err)
		}
	}
	return o, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func refOf(pr *openapi3.ParameterRef) string {
	if pr == nil {
		return ""
	}
	return pr.Ref
}

func withDescription(s any, d string) any {
	m, ok := s.(map[string]any)
	if !ok || d == "" {
		return s
	}
	if _, has := m["description"]; has {
		return s
	}
	cp := make(map[string]any, len(m)+1)
	for k, v := range m {
		cp[k] = v
	}
	cp["description"] = d
	return cp
}

func paramStyle(p *openapi3.Parameter) (string, bool) {
	style := p.Style
	if style == "" {
		switch p.In {
		case openapi3.ParameterInQuery, openapi3.ParameterInCookie:
			style = "form"
		default:
			style = "simple"
		}
	}
	explode := style == "form"
	if p.Explode != nil {
		explode = *p.Explode
	}
	return style, explode
}

func annotations(method string) *model.Annotations {
	t, f := true, false
	a := &model.Annotations{OpenWorldHint: &t}
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		a.ReadOnlyHint = &t
	case http.MethodDelete:
		a.ReadOnlyHint, a.DestructiveHint, a.IdempotentHint = &f, &t, &t
	case http.MethodPut:
		a.ReadOnlyHint, a.DestructiveHint, a.IdempotentHint = &f, &f, &t
	default:
		a.ReadOnlyHint, a.DestructiveHint, a.IdempotentHint = &f, &f, &f
	}
	return a
}

func isJSONType(ct string) bool {
	ct = strings.ToLower(strings.TrimSpace(strings.Split(ct, ";")[0]))
	return ct == "application/json" || strings.HasSuffix(ct, "+json")
}

func jsonMedia(c openapi3.Content) (string, *openapi3.MediaType) {
	for _, ct := range sortedKeys(c) {
		if isJSONType(ct) {
			return ct, c[ct]
		}
	}
	if mt := c["*/*"]; mt != nil {
		return "*/*", mt
	}
	return "", nil
}

func firstMedia(c openapi3.Content) *openapi3.MediaType {
	_, mt := jsonMedia(c)
	return mt
}

// bodyMedia picks how a body is sent: JSON first, then a form, multipart,
// text, and raw bytes.
func bodyMedia(c openapi3.Content) (string, *openapi3.MediaType) {
	if ct, mt := jsonMedia(c); mt != nil {
		if ct == "*/*" {
			ct = "application/json"
		}
		return ct, mt
	}
	for _, ct := range []string{"application/x-www-form-urlencoded", "multipart/form-data", "text/plain", "application/octet-stream"} {
		if mt := c[ct]; mt != nil {
			return ct, mt
		}
	}
	return "", nil
}

// fileSchema is the input schema of a file in a multipart body.
var fileSchema = map[string]any{
	"type":        "object",
	"description": "a file: its name, and its content as text (content) or as base64 (contentBase64); type is its media type (default application/octet-stream)",
	"properties": map[string]any{
		"name":          map[string]any{"type": "string"},
		"content":       map[string]any{"type": "string"},
		"contentBase64": map[string]any{"type": "string", "contentEncoding": "base64"},
		"type":          map[string]any{"type": "string"},
	},
	"additionalProperties": false,
}

// octetSchema is the input schema of an application/octet-stream body.
var octetSchema = map[string]any{
	"anyOf": []any{
		map[string]any{"type": "string"},
		map[string]any{
			"type":                 "object",
			"properties":           map[string]any{"contentBase64": map[string]any{"type": "string", "contentEncoding": "base64"}},
			"required":             []any{"contentBase64"},
			"additionalProperties": false,
		},
	},
}

// isBinary reports whether a converted schema is a file's bytes: a string
// of format binary (OpenAPI 3.0, Swagger's type file), or one with a
// contentMediaType and no base64 encoding (3.1).
func isBinary(s any) bool {
	m, ok := s.(map[string]any)
	if !ok {
		return false
	}
	if m["format"] == "binary" || m["type"] == "file" {
		return true
	}
	_, media := m["contentMediaType"]
	return media && m["contentEncoding"] == nil
}

// multipartSchema gives a multipart body's schema with each file field
// (binary, or an array of binaries) taking a file object, and names them.
func multipartSchema(s any) (any, map[string]bool) {
	m, ok := s.(map[string]any)
	if !ok {
		return s, nil
	}
	props, ok := m["properties"].(map[string]any)
	if !ok {
		return s, nil
	}
	files := map[string]bool{}
	np := make(map[string]any, len(props))
	for name, p := range props {
		np[name] = p
		if isBinary(p) {
			files[name] = true
			np[name] = fileSchema
			if d := descriptionOf(p); d != "" {
				f := make(map[string]any, len(fileSchema))
				for k, v := range fileSchema {
					f[k] = v
				}
				f["description"] = d + " (" + fileSchema["description"].(string) + ")"
				np[name] = f
			}
			continue
		}
		if pm, ok := p.(map[string]any); ok && pm["type"] == "array" && isBinary(pm["items"]) {
			files[name] = true
			cp := make(map[string]any, len(pm))
			for k, v := range pm {
				cp[k] = v
			}
			cp["items"] = fileSchema
			np[name] = cp
		}
	}
	if len(files) == 0 {
		return s, nil
	}
	cp := make(map[string]any, len(m))
	for k, v := range m {
		cp[k] = v
	}
	cp["properties"] = np
	return cp, files
}

func descriptionOf(s any) string {
	if m, ok := s.(map[string]any); ok {
		if d, ok := m["description"].(string); ok {
			return d
		}
	}
	return ""
}

// converter turns OpenAPI schemas into self-contained JSON Schemas: every
// reference inlined (a schema reached again through itself is an error),
// OpenAPI 3.0's nullable and boolean exclusive bounds rewritten, and
// keywords that are not JSON Schema's dropped.
type converter struct {
	doc   *openapi3.T
	done  *sync.Map // converted components by reference, shared: read only once stored
	stack []string
}

func (c *converter) schema(sr *openapi3.SchemaRef) (any, error) {
	if sr == nil {
		return map[string]any{}, nil
	}
	if sr.Ref != "" {
		return c.ref(sr.Ref, sr)
	}
	if sr.Value == nil {
		return nil, fmt.Errorf("a schema is empty")
	}
	v, err := plain(sr.Value)
	if err != nil {
		return nil, fmt.Errorf("encoding a schema: %w", err)
	}
	return c.walk(v)
}

// plain gives what json.Unmarshal would read from json.Marshal(v) for a
// kin-openapi value (map[string]any, []any, string, float64, bool, nil):
// its MarshalJSON is MarshalYAML written out, and so is each value inside
// it, so following MarshalYAML down gives the same without writing and
// reading JSON again at every level of a schema (TestPlainIsTheJSONForm).
// Anything else goes through JSON.
func plain(v any) (any, error) {
	switch x := v.(type) {
	case nil, string, bool, float64:
		return x, nil
	case map[string]any:
		return plainMap(x)
	case []any:
		return plainSlice(x)
	case []string:
		return plainSlice(x)
	case openapi3.SchemaRefs:
		return plainSlice(x)
	case openapi3.Schemas:
		return plainMap(x)
	case *openapi3.SchemaRef:
		if x == nil {
			return nil, nil
		}
		return plainYAML(x.MarshalYAML())
	case *openapi3.Schema:
		if x == nil {
			return nil, nil
		}
		return plainYAML(x.MarshalYAML())
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func plainSlice[T any](x []T) (any, error) {
	out := make([]any, len(x))
	for i, e := range x {
		p, err := plain(e)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

func plainMap[T any](x map[string]T) (any, error) {
	out := make(map[string]any, len(x))
	for k, e := range x {
		p, err := plain(e)
		if err != nil {
			return nil, err
		}
		out[k] = p
	}
	return out, nil
}

func plainYAML(y any, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return plain(y)
}

func (c *converter) ref(ref string, sr *openapi3.SchemaRef) (any, error) {
	if v, ok := c.done.Load(ref); ok {
		return v, nil
	}
	if slices.Contains(c.stack, ref) {
		cycle := append(slices.Clone(c.stack[slices.Index(c.stack, ref):]), ref)
		return nil, fmt.Errorf("the schema %s refers to itself (%s): a recursive schema cannot be given to the model as one inlined JSON Schema", ref, strings.Join(cycle, " → "))
	}
	var target *openapi3.SchemaRef
	if sr != nil && sr.Value != nil {
		target = &openapi3.SchemaRef{Value: sr.Value}
	} else if name, ok := strings.CutPrefix(ref, "#/components/schemas/"); ok && c.doc.Components != nil {
		target = c.doc.Components.Schemas[name]
		if target != nil {
			target = &openapi3.SchemaRef{Value: target.Value}
		}
	}
	if target == nil || target.Value == nil {
		return nil, fmt.Errorf("the reference %s could not be resolved", ref)
	}
	c.stack = append(c.stack, ref)
	v, err := c.schema(target)
	c.stack = c.stack[:len(c.stack)-1]
	if err != nil {
		return nil, err
	}
	c.done.Store(ref, v)
	return v, nil
}

// dropped are OpenAPI keywords with no meaning in JSON Schema.
var dropped = map[string]bool{"example": true, "xml": true, "discriminator": true, "externalDocs": true, "nullable": true}

func (c *converter) walk(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		if ref, ok := x["$ref"].(string); ok {
			r, err := c.ref(ref, nil)
			if err != nil {
				return nil, err
			}
			return r, nil
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			if dropped[k] || strings.HasPrefix(k, "x-") {
				continue
			}
			switch k {
			case "properties", "patternProperties", "$defs", "dependentSchemas":
				m, ok := e.(map[string]any)
				if !ok {
					continue
				}
				pm := make(map[string]any, len(m))
				for name, s := range m {
					w, err := c.walk(s)
					if err != nil {
						return nil, err
					}
					pm[name] = w
				}
				out[k] = pm
				continue
			case "enum", "const", "default", "examples", "required":
				out[k] = e
				continue
			}
			w, err := c.walk(e)
			if err != nil {
				return nil, err
			}
			out[k] = w
		}
		if x["nullable"] == true {
			switch t := out["type"].(type) {
			case string:
				out["type"] = []any{t, "null"}
			case []any:
				if !slices.Contains(t, any("null")) {
					out["type"] = append(t, "null")
				}
			}
		}
		for _, k := range []string{"exclusiveMinimum", "exclusiveMaximum"} {
			if b, ok := out[k].(bool); ok {
				bound := "minimum"
				if k == "exclusiveMaximum" {
					bound = "maximum"
				}
				if n, has := out[bound]; b && has {
					out[k] = n
					delete(out, bound)
				} else {
					delete(out, k)
				}
			}
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			w, err := c.walk(e)
			if err != nil {
				return nil, err
			}
			out[i] = w
		}
		return out, nil
	}
	return v, nil
}
