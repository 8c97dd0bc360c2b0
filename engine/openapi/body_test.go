package openapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func uploadOp() *Operation {
	return &Operation{Method: "POST", Path: "/pets/{id}/photos", BodyKey: "body", BodyType: "multipart/form-data",
		FileFields: map[string]bool{"photo": true, "extra": true},
		Params:     []Param{{Name: "id", In: "path", Key: "id", Style: "simple", Required: true}}}
}

func octetOp() *Operation {
	return &Operation{Method: "PUT", Path: "/blob", BodyKey: "body", BodyType: "application/octet-stream"}
}

type part struct {
	Name, File, Type, Body string
}

// readParts reads a multipart request body back with mime/multipart.
func readParts(t testing.TB, ct string, body []byte) ([]part, error) {
	t.Helper()
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "multipart/form-data" {
		return nil, errors.Join(err, errors.New("not multipart: "+ct))
	}
	r := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	var out []part
	for {
		p, err := r.NextRawPart()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(p)
		if err != nil {
			return nil, err
		}
		out = append(out, part{p.FormName(), p.FileName(), p.Header.Get("Content-Type"), string(b)})
	}
}

// TestBuildBodies: a multipart body has a part per field in name order (an
// array a part per item, an object a JSON part), a file field a file part
// from text or base64 with its name and type; an octet-stream body is a
// string's bytes or base64-decoded bytes.
func TestBuildBodies(t *testing.T) {
	base, _ := url.Parse("https://api.example.test")
	png := []byte{0x89, 'P', 'N', 'G', 0, 1, 2, 0xff}
	for _, tc := range []struct {
		name  string
		op    *Operation
		args  string
		parts []part
		raw   []byte
	}{
		{"multipart fields and files", uploadOp(),
			`{"id":"7","body":{"caption":"a cat","tags":["x",2],"meta":{"k":true},"photo":{"name":"cat.png","contentBase64":"` + base64.StdEncoding.EncodeToString(png) + `","type":"image/png"},"extra":[{"content":"one"},{"name":"b.txt","content":"two","type":"text/plain"}]}}`,
			[]part{
				{Name: "caption", Body: "a cat"},
				{Name: "extra", File: "extra", Type: "application/octet-stream", Body: "one"},
				{Name: "extra", File: "b.txt", Type: "text/plain", Body: "two"},
				{Name: "meta", Type: "application/json", Body: `{"k":true}`},
				{Name: "photo", File: "cat.png", Type: "image/png", Body: string(png)},
				{Name: "tags", Body: "x"},
				{Name: "tags", Body: "2"},
			}, nil},
		{"octet-stream text", octetOp(), `{"body":"héllo"}`, nil, []byte("héllo")},
		{"octet-stream base64", octetOp(), `{"body":{"contentBase64":"` + base64.StdEncoding.EncodeToString(png) + `"}}`, nil, png},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var args map[string]any
			if err := json.Unmarshal([]byte(tc.args), &args); err != nil {
				t.Fatal(err)
			}
			req, err := Build(context.Background(), base, tc.op, args, nil, "")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(req.Body)
			if tc.raw != nil {
				if req.Header.Get("Content-Type") != "application/octet-stream" || !bytes.Equal(body, tc.raw) {
					t.Errorf("body %q (%s), want %q", body, req.Header.Get("Content-Type"), tc.raw)
				}
				return
			}
			parts, err := readParts(t, req.Header.Get("Content-Type"), body)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.parts, parts); d != "" {
				t.Errorf("parts (-want +got):\n%s", d)
			}
		})
	}
}

// TestBuildBodiesRefuses: bodies that cannot be sent are refused, naming
// the field.
func TestBuildBodiesRefuses(t *testing.T) {
	base, _ := url.Parse("https://api.example.test")
	for _, tc := range []struct {
		op         *Operation
		args, want string
	}{
		{uploadOp(), `{"id":"1","body":"text"}`, "a multipart body is an object of fields, not string"},
		{uploadOp(), `{"id":"1","body":{"photo":"just text"}}`, "argument body: field photo: a file is an object"},
		{uploadOp(), `{"id":"1","body":{"photo":{"name":"a"}}}`, "field photo: a file needs content (text) or contentBase64"},
		{uploadOp(), `{"id":"1","body":{"photo":{"content":"a","contentBase64":"YQ=="}}}`, "content or contentBase64, not both"},
		{uploadOp(), `{"id":"1","body":{"photo":{"contentBase64":"%%%"}}}`, "contentBase64 is not base64"},
		{uploadOp(), `{"id":"1","body":{"photo":{"content":"a","size":1}}}`, "unknown property size"},
		{uploadOp(), `{"id":"1","body":{"photo":{"content":"a","name":"x\r\nX-Evil: 1"}}}`, "line break"},
		{uploadOp(), `{"id":"1","body":{"photo":{"content":"a","type":"not a type"}}}`, "is not a media type"},
		{uploadOp(), `{"id":"1","body":{"a\r\nb":"x"}}`, "line break"},
		{uploadOp(), `{"id":"1","body":{"\u007f":"x"}}`, "control character"},
		{uploadOp(), `{"id":"1","body":{"a\u0001":"x"}}`, "control character"},
		{uploadOp(), `{"id":"1","body":{"photo":{"content":"a","name":"a\u007f.txt"}}}`, "control character"},
		{uploadOp(), `{"id":"1","body":{"photo":{"content":"a","type":"text/plain;\u0008"}}}`, "control character"},
		{uploadOp(), `{"id":"1","body":{"extra":[{"content":"a"},3]}}`, "field extra item 1: a file is an object"},
		{octetOp(), `{"body":42}`, "the body is a string or {contentBase64}, not float64"},
		{octetOp(), `{"body":{"content":"x"}}`, "unknown property content"},
		{octetOp(), `{"body":{}}`, "the body needs contentBase64"},
	} {
		var args map[string]any
		if err := json.Unmarshal([]byte(tc.args), &args); err != nil {
			t.Fatal(err)
		}
		_, err := Build(context.Background(), base, tc.op, args, nil, "")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// FuzzBuildBodies: any arguments to a multipart or an octet-stream
// operation give a request whose body reads back (every multipart part
// named by a field of the arguments, one file part per file given) or an
// error.
func FuzzBuildBodies(f *testing.F) {
	for _, s := range []string{
		`{"id":"1","body":{"caption":"c","photo":{"name":"p.png","contentBase64":"iVBO","type":"image/png"}}}`,
		`{"id":"1","body":{"extra":[{"content":"a"},{"content":"b","name":"\"q\".txt"}],"n":1.5,"o":{"a":[1]}}}`,
		`{"id":"1","body":{"ünï":"x","photo":{"content":"--boundary\r\n"}}}`,
		`{"body":"raw"}`, `{"body":{"contentBase64":"AAEC"}}`,
	} {
		f.Add(s)
	}
	base, _ := url.Parse("https://api.example.test")
	f.Fuzz(func(t *testing.T, s string) {
		var args map[string]any
		if json.Unmarshal([]byte(s), &args) != nil {
			return
		}
		for _, op := range []*Operation{uploadOp(), octetOp()} {
			req, err := Build(context.Background(), base, op, args, nil, "")
			if err != nil {
				if err.Error() == "" {
					t.Fatal("an empty error")
				}
				continue
			}
			if req.Body == nil {
				continue
			}
			body, _ := io.ReadAll(req.Body)
			if op.BodyType != "multipart/form-data" {
				continue
			}
			parts, err := readParts(t, req.Header.Get("Content-Type"), body)
			if err != nil {
				t.Fatalf("the multipart body does not read back: %v\n%q", err, body)
			}
			fields, _ := args["body"].(map[string]any)
			files := 0
			for _, p := range parts {
				if _, ok := fields[p.Name]; !ok {
					t.Fatalf("a part named %q is no field of %v", p.Name, fields)
				}
				if p.File != "" {
					files++
				}
			}
			want := 0
			for name := range op.FileFields {
				switch v := fields[name].(type) {
				case []any:
					want += len(v)
				case map[string]any:
					want++
				}
			}
			if files != want {
				t.Fatalf("%d file parts, want %d: %q", files, want, body)
			}
		}
	})
}
