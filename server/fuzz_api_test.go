package server_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/store/sqlite"
)

// FuzzAPI posts arbitrary bodies to every unary RPC of the API (the
// method chosen by the first byte), in-process on a real SQLite store, as
// an admin of the default tenant: whatever a client sends is answered,
// never with a panic or an internal error; bad input is the client's
// error (invalid_argument, not_found, failed_precondition, ...).
func FuzzAPI(f *testing.F) {
	var procedures []string
	for _, svc := range services() {
		for i := range svc.Methods().Len() {
			if m := svc.Methods().Get(i); !m.IsStreamingServer() {
				procedures = append(procedures, "/"+string(svc.FullName())+"/"+string(m.Name()))
			}
		}
	}
	for i := range procedures {
		f.Add(byte(i), []byte(`{}`))
	}
	f.Add(byte(0), []byte(`{"role":"ROLE_CLIENT","tenant":"acme","hash":"zz"}`))
	f.Add(byte(0), []byte(`{"jobs":[{"kind":"k","payload":{"a":1}}]}`))
	s, err := sqlite.OpenStore(f.Context(), filepath.Join(f.TempDir(), "stint.db"), sqlite.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	h, err := server.New(server.Config{Store: s, NoAuth: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, which byte, body []byte) {
		procedure := procedures[int(which)%len(procedures)]
		if strings.HasSuffix(procedure, "/TestWebhook") || strings.HasSuffix(procedure, "/Claim") {
			return // they call out to a URL or long-poll: covered by their own tests
		}
		req := httptest.NewRequest(http.MethodPost, procedure, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("%s %q: %d %s", procedure, body, rec.Code, rec.Body)
		}
		if b := rec.Body.String(); strings.Contains(b, `"code":"internal"`) || strings.Contains(b, `"code":"unknown"`) {
			t.Fatalf("%s %q: %s", procedure, body, b)
		}
	})
}
