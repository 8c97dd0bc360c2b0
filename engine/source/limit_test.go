package source

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// An HTTP upstream's answer that is not an event stream is read whole by
// go-sdk: it is bounded like a stdio upstream's line (MaxMessageBytes).
// Before, a remote server answering one call with 600 MB took the hub to
// 12 GB and nine minutes.
func TestHTTPAnswerIsBounded(t *testing.T) {
	chunk := strings.Repeat("a", 1<<20)
	for _, tc := range []struct {
		name    string
		ctype   string
		mb      int
		length  bool // send Content-Length
		wantErr bool
	}{
		{"1 MB of JSON", "application/json", 1, true, false},
		{"64 MB of JSON", "application/json", 64, false, false},
		{"65 MB of JSON, its length announced", "application/json", 65, true, true},
		{"65 MB of JSON, chunked", "application/json", 65, false, true},
		{"65 MB of event stream (go-sdk bounds each event)", "text/event-stream", 65, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.ctype)
				if tc.length {
					w.Header().Set("Content-Length", strconv.Itoa(tc.mb<<20))
				}
				for range tc.mb {
					if _, err := io.WriteString(w, chunk); err != nil {
						return
					}
				}
			}))
			defer srv.Close()
			req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("{}"))
			rec := &statusRecorder{base: http.DefaultTransport}
			resp, err := rec.RoundTrip(req)
			var n int64
			if err == nil {
				n, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			if got := err != nil; got != tc.wantErr {
				t.Fatalf("read %d bytes, err %v; want an error: %v", n, err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "over the limit of 67108864") {
				t.Errorf("error %q does not name the limit", err)
			}
			if err == nil && n != int64(tc.mb)<<20 {
				t.Errorf("read %d bytes, want %d", n, tc.mb<<20)
			}
			if errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("cut short: %v", err)
			}
		})
	}
}
