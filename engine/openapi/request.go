package openapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/capabilities-sh/capabilities/engine/model"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// Build makes the HTTP request for one call: path parameters templated and
// escaped, query parameters by style and explode, headers, cookies, and the
// body as JSON, a form or text. base is the reviewed server URL; the request
// never leaves its origin. credential ("" for none) is applied by auth when
// the operation is secured. Any arguments give a valid request or an error
// saying which argument is wrong.
func Build(ctx context.Context, base *url.URL, op *Operation, args map[string]any, auth *Auth, credential string) (*http.Request, error) {
	known := map[string]bool{}
	path := op.Path
	query := url.Values{}
	header := http.Header{}
	var cookies []string
	for _, p := range op.Params {
		known[p.Key] = true
		v, ok := args[p.Key]
		if !ok || v == nil {
			if p.Required {
				return nil, fmt.Errorf("argument %s is required (%s parameter %s)", p.Key, p.In, p.Name)
			}
			continue
		}
		switch p.In {
		case "path":
			s, err := pathValue(p, v)
			if err != nil {
				return nil, fmt.Errorf("argument %s: %w", p.Key, err)
			}
			if !strings.Contains(path, "{"+p.Name+"}") {
				return nil, fmt.Errorf("argument %s: the path %s has no {%s}", p.Key, op.Path, p.Name)
			}
			path = strings.ReplaceAll(path, "{"+p.Name+"}", s)
		case "query":
			if err := queryValue(query, p, v); err != nil {
				return nil, fmt.Errorf("argument %s: %w", p.Key, err)
			}
		case "header":
			s, err := simple(v, p.Explode)
			if err != nil {
				return nil, fmt.Errorf("argument %s: %w", p.Key, err)
			}
			if strings.ContainsAny(s, "\r\n\x00") {
				return nil, fmt.Errorf("argument %s: a header value cannot hold a line break", p.Key)
			}
			header.Set(p.Name, s)
		case "cookie":
			s, err := simple(v, false)
			if err != nil {
				return nil, fmt.Errorf("argument %s: %w", p.Key, err)
			}
			cookies = append(cookies, p.Name+"="+url.QueryEscape(s))
		default:
			return nil, fmt.Errorf("parameter %s is in %q, which the hub does not send", p.Name, p.In)
		}
	}
	if strings.Contains(path, "{") {
		return nil, fmt.Errorf("the path %s still has a parameter after templating: the document does not describe it", op.Path)
	}
	var body io.Reader
	if op.BodyKey != "" {
		known[op.BodyKey] = true
		if v, ok := args[op.BodyKey]; ok && v != nil {
			b, ct, err := encodeBody(op, v)
			if err != nil {
				return nil, fmt.Errorf("argument %s: %w", op.BodyKey, err)
			}
			body = bytes.NewReader(b)
			header.Set("Content-Type", ct)
		}
	}
	var unknown []string
	for k := range args {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("unknown argument %s (the operation takes %s)", strings.Join(unknown, ", "), strings.Join(keys(known), ", "))
	}
	if auth != nil && op.Secured && credential != "" {
		switch auth.Scheme {
		case "apiKey":
			switch auth.In {
			case "header":
				header.Set(auth.Name, credential)
			case "query":
				query.Set(auth.Name, credential)
			case "cookie":
				cookies = append(cookies, auth.Name+"="+url.QueryEscape(credential))
			}
		case "bearer", "oauth2":
			header.Set("Authorization", "Bearer "+credential)
		case "basic":
			header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(credential)))
		}
	}
	// The path is written escaped: an escaped "/" in a value stays one.
	full, err := url.Parse(base.Scheme + "://" + base.Host + strings.TrimRight(base.EscapedPath(), "/") + path)
	if err != nil {
		return nil, fmt.Errorf("building the URL: %w", err)
	}
	full.RawQuery = query.Encode()
	if origin(full) != origin(base) {
		return nil, fmt.Errorf("building the URL: it would leave %s", origin(base))
	}
	req, err := http.NewRequestWithContext(ctx, op.Method, full.String(), body)
	if err != nil {
		return nil, fmt.Errorf("building the request: %w", err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	if len(cookies) > 0 {
		req.Header.Set("Cookie", strings.Join(cookies, "; "))
	}
	req.Header.Set("Accept", "application/json, */*;q=0.5")
	return req, nil
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	if len(out) == 0 {
		return []string{"no arguments"}
	}
	return out
}

// scalar writes a JSON scalar as the text an HTTP API reads.
func scalar(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case json.Number:
		return x.String(), nil
	case int:
		return strconv.Itoa(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	}
	return "", fmt.Errorf("expected a string, number or boolean, not %s", kind(v))
}

func kind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// simple is the "simple" style: arrays comma-joined, objects k,v,k,v (or
// k=v,k=v exploded).
func simple(v any, explode bool) (string, error) {
	switch x := v.(type) {
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			s, err := scalar(e)
			if err != nil {
				return "", fmt.Errorf("item %d: %w", i, err)
			}
			parts[i] = s
		}
		return strings.Join(parts, ","), nil
	case map[string]any:
		ks := make([]string, 0, len(x))
		for k := range x {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		var parts []string
		for _, k := range ks {
			s, err := scalar(x[k])
			if err != nil {
				return "", fmt.Errorf("property %s: %w", k, err)
			}
			if explode {
				parts = append(parts, k+"="+s)
			} else {
				parts = append(parts, k, s)
			}
		}
		return strings.Join(parts, ","), nil
	}
	return scalar(v)
}

// pathValue is one path segment: simple style (label and matrix too),
// every reserved character escaped, so a value can never add a segment.
func pathValue(p Param, v any) (string, error) {
	if arr, ok := v.([]any); ok && len(arr) == 0 {
		return "", fmt.Errorf("a path parameter cannot be empty")
	}
	s, err := simple(v, p.Explode)
	if err != nil {
		return "", err
	}
	if s == "" {
		return "", fmt.Errorf("a path parameter cannot be empty")
	}
	if s == "." || s == ".." {
		return "", fmt.Errorf("%q is not a path parameter value the hub sends", s)
	}
	esc := url.PathEscape(s)
	switch p.Style {
	case "label":
		return "." + esc, nil
	case "matrix":
		return ";" + url.PathEscape(p.Name) + "=" + esc, nil
	}
	return esc, nil
}

func queryValue(q url.Values, p Param, v any) error {
	switch x := v.(type) {
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			s, err := scalar(e)
			if err != nil {
				return fmt.Errorf("item %d: %w", i, err)
			}
			parts[i] = s
		}
		switch {
		case p.Style == "form" && p.Explode:
			for _, s := range parts {
				q.Add(p.Name, s)
			}
		case p.Style == "spaceDelimited":
			q.Add(p.Name, strings.Join(parts, " "))
		case p.Style == "pipeDelimited":
			q.Add(p.Name, strings.Join(parts, "|"))
		default:
			q.Add(p.Name, strings.Join(parts, ","))
		}
		return nil
	case map[string]any:
		ks := make([]string, 0, len(x))
		for k := range x {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		switch {
		case p.Style == "deepObject":
			for _, k := range ks {
				s, err := scalar(x[k])
				if err != nil {
					return fmt.Errorf("property %s: %w", k, err)
				}
				q.Add(p.Name+"["+k+"]", s)
			}
		case p.Explode:
			for _, k := range ks {
				s, err := scalar(x[k])
				if err != nil {
					return fmt.Errorf("property %s: %w", k, err)
				}
				q.Add(k, s)
			}
		default:
			s, err := simple(x, false)
			if err != nil {
				return err
			}
			q.Add(p.Name, s)
		}
		return nil
	}
	s, err := scalar(v)
	if err != nil {
		return err
	}
	q.Add(p.Name, s)
	return nil
}

// encodeBody writes a body as op.BodyType says, and gives its
// Content-Type.
func encodeBody(op *Operation, v any) ([]byte, string, error) {
	ct := op.BodyType
	switch ct {
	case "multipart/form-data":
		return encodeMultipart(op, v)
	case "application/octet-stream":
		b, err := fileBytes(v, false)
		return b, ct, err
	}
	b, err := encodeSimpleBody(ct, v)
	return b, ct, err
}

func encodeSimpleBody(ct string, v any) ([]byte, error) {
	switch {
	case isJSONType(ct):
		return json.Marshal(v)
	case ct == "application/x-www-form-urlencoded":
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("a form body is an object of fields, not %s", kind(v))
		}
		form := url.Values{}
		for k, e := range m {
			if arr, ok := e.([]any); ok {
				for i, it := range arr {
					s, err := scalar(it)
					if err != nil {
						return nil, fmt.Errorf("field %s item %d: %w", k, i, err)
					}
					form.Add(k, s)
				}
				continue
			}
			if e == nil {
				continue
			}
			s, err := scalar(e)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", k, err)
			}
			form.Add(k, s)
		}
		return []byte(form.Encode()), nil
	default:
		s, err := scalar(v)
		if err != nil {
			return nil, err
		}
		return []byte(s), nil
	}
}

// FileArg is a file in the arguments: its name, its content as text or as
// base64, and its media type.
type FileArg struct {
	Name          string `json:"name"`
	Content       string `json:"content"`
	ContentBase64 string `json:"contentBase64"`
	Type          string `json:"type"`
}

// fileBytes reads a file's bytes: a string is its text (when text is
// allowed), an object {content} or {contentBase64}.
func fileBytes(v any, object bool) ([]byte, error) {
	if s, ok := v.(string); ok && !object {
		return []byte(s), nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		if object {
			return nil, fmt.Errorf("a file is an object {name, content or contentBase64, type}, not %s", kind(v))
		}
		return nil, fmt.Errorf("the body is a string or {contentBase64}, not %s", kind(v))
	}
	var f FileArg
	for k, e := range m {
		switch k {
		case "name", "type", "content", "contentBase64":
		default:
			if object {
				return nil, fmt.Errorf("unknown property %s (a file has name, content or contentBase64, and type)", k)
			}
			return nil, fmt.Errorf("unknown property %s (the body is a string or {contentBase64})", k)
		}
		s, ok := e.(string)
		if !ok && e != nil {
			return nil, fmt.Errorf("property %s: expected a string, not %s", k, kind(e))
		}
		switch k {
		case "name":
			f.Name = s
		case "type":
			f.Type = s
		case "content":
			f.Content = s
		case "contentBase64":
			f.ContentBase64 = s
		}
		if !object && k != "contentBase64" {
			return nil, fmt.Errorf("unknown property %s (the body is a string or {contentBase64})", k)
		}
	}
	_, hasText := m["content"]
	_, hasB64 := m["contentBase64"]
	switch {
	case hasText && hasB64:
		return nil, fmt.Errorf("give content or contentBase64, not both")
	case hasText:
		return []byte(f.Content), nil
	case hasB64:
		b, err := base64.StdEncoding.DecodeString(f.ContentBase64)
		if err != nil {
			if b, err2 := base64.RawStdEncoding.DecodeString(f.ContentBase64); err2 == nil {
				return b, nil
			}
			return nil, fmt.Errorf("contentBase64 is not base64: %w", err)
		}
		return b, nil
	}
	if object {
		return nil, fmt.Errorf("a file needs content (text) or contentBase64")
	}
	return nil, fmt.Errorf("the body needs contentBase64")
}

// encodeMultipart writes a multipart/form-data body: each field of the
// object a part, in name order; an array a part per item; a file field a
// file part; an object (not a file) a JSON part.
func encodeMultipart(op *Operation, v any) ([]byte, string, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, "", fmt.Errorf("a multipart body is an object of fields, not %s", kind(v))
	}
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		if !safeHeaderText(name) {
			return nil, "", fmt.Errorf("field %q: a field name cannot hold a line break or another control character", name)
		}
		e := m[name]
		items, isArray := e.([]any)
		if !isArray {
			items = []any{e}
		}
		for i, it := range items {
			where := "field " + name
			if isArray {
				where = fmt.Sprintf("field %s item %d", name, i)
			}
			if err := writePart(w, name, it, op.FileFields[name]); err != nil {
				return nil, "", fmt.Errorf("%s: %w", where, err)
			}
		}
	}
	if err := w.Close(); err != nil {
		return nil, "", fmt.Errorf("writing the multipart body: %w", err)
	}
	return buf.Bytes(), w.FormDataContentType(), nil
}

func writePart(w *multipart.Writer, name string, v any, file bool) error {
	if v == nil {
		return nil
	}
	if file {
		b, err := fileBytes(v, true)
		if err != nil {
			return err
		}
		m := v.(map[string]any)
		fname, _ := m["name"].(string)
		if fname == "" {
			fname = name
		}
		ct, _ := m["type"].(string)
		if ct == "" {
			ct = "application/octet-stream"
		}
		if !safeHeaderText(fname) || !safeHeaderText(ct) {
			return fmt.Errorf("a file's name or type cannot hold a line break or another control character")
		}
		if _, _, err := mime.ParseMediaType(ct); err != nil {
			return fmt.Errorf("type %q is not a media type: %w", ct, err)
		}
		// Quoted, as browsers and mime/multipart write it (some servers
		// read nothing else).
		h := make(textproto.MIMEHeader)
		h.Set("Content-Disposition", multipart.FileContentDisposition(name, fname))
		h.Set("Content-Type", ct)
		pw, err := w.CreatePart(h)
		if err != nil {
			return fmt.Errorf("writing the part: %w", err)
		}
		_, err = pw.Write(b)
		return err
	}
	var (
		b  []byte
		ct string
	)
	switch x := v.(type) {
	case map[string]any, []any:
		j, err := json.Marshal(x)
		if err != nil {
			return fmt.Errorf("encoding the field as JSON: %w", err)
		}
		b, ct = j, "application/json"
	default:
		s, err := scalar(v)
		if err != nil {
			return err
		}
		b = []byte(s)
	}
	h := make(textproto.MIMEHeader)
	// The file form without its filename: the name quoted and escaped
	// the same way.
	h.Set("Content-Disposition", strings.TrimSuffix(multipart.FileContentDisposition(name, ""), `; filename=""`))
	if ct != "" {
		h.Set("Content-Type", ct)
	}
	pw, err := w.CreatePart(h)
	if err != nil {
		return fmt.Errorf("writing the part: %w", err)
	}
	_, err = pw.Write(b)
	return err
}

// safeHeaderText reports whether s can stand in a part's header: no
// control character (a line break, NUL, DEL…), which a reader refuses or
// takes for the header's end.
func safeHeaderText(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// origin is model.Origin: scheme://host:port, the port written out.
func origin(u *url.URL) string { return model.Origin(u) }

// Origin is u's origin, scheme://host:port.
func Origin(u *url.URL) string { return origin(u) }
