package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/store"
)

// nested is a JSON object nesting depth objects deep.
func nested(depth int) string {
	return strings.Repeat(`{"a":`, depth-1) + `{}` + strings.Repeat(`}`, depth-1)
}

// sized is a JSON object of exactly n bytes as the server encodes it.
func sized(n int) string { return `{"p":"` + strings.Repeat("a", n-8) + `"}` }

// TestValidation: bad input over plain JSON is a 400 invalid_argument whose
// message names the problem, and nothing is written; the limits themselves
// are accepted.
func TestValidation(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s store.Store) {
		e := start(t, s, server.Config{})
		client := e.token("acme", store.RoleClient)
		limit := server.DefaultMaxJSONBytes
		enqueue := func(spec string) []byte { return []byte(`{"job":` + spec + `}`) }
		cases := []struct {
			name      string
			procedure string
			body      []byte
			ok        bool
			says      string // the error message names this
		}{
			{"payload at the limit", "/stint.v1.JobService/Enqueue", enqueue(`{"kind":"k","payload":` + sized(limit) + `}`), true, ""},
			{"payload one byte over", "/stint.v1.JobService/Enqueue", enqueue(`{"kind":"k","payload":` + sized(limit+1) + `}`), false, fmt.Sprint(limit)},
			{"nesting 64", "/stint.v1.JobService/Enqueue", enqueue(`{"kind":"k","payload":` + nested(64) + `}`), true, ""},
			{"nesting 65", "/stint.v1.JobService/Enqueue", enqueue(`{"kind":"k","payload":` + nested(65) + `}`), false, "64"},
			{"NUL in kind", "/stint.v1.JobService/Enqueue", enqueue(`{"kind":"a\u0000b"}`), false, "NUL"},
			{"NUL in payload", "/stint.v1.JobService/Enqueue", enqueue(`{"kind":"k","payload":{"x":"a\u0000"}}`), false, "NUL"},
			{"invalid UTF-8", "/stint.v1.JobService/Enqueue", enqueue("{\"kind\":\"\xff\xfe\"}"), false, "UTF-8"},
			{"array payload", "/stint.v1.JobService/Enqueue", enqueue(`{"kind":"k","payload":[1,2]}`), false, "unexpected token"},
			{"string payload", "/stint.v1.JobService/Enqueue", enqueue(`{"kind":"k","payload":"x"}`), false, "unexpected token"},
			{"unknown enum number", "/stint.v1.JobService/Enqueue", enqueue(`{"kind":"k","onExhausted":99}`), false, "on_exhausted"},
			{"unknown enum name", "/stint.v1.JobService/Enqueue", enqueue(`{"kind":"k","onExhausted":"JOB_STATE_NOPE"}`), false, "JOB_STATE_NOPE"},
			{"kind too long", "/stint.v1.JobService/Enqueue", enqueue(`{"kind":"` + strings.Repeat("k", 201) + `"}`), false, "200"},
			{"no kind", "/stint.v1.JobService/Enqueue", enqueue(`{"queue":"q"}`), false, "kind"},
			{"slash in queue", "/stint.v1.JobService/Enqueue", enqueue(`{"kind":"k","queue":"b/q"}`), false, "/"},
			{"negative timeout", "/stint.v1.JobService/Enqueue", enqueue(`{"kind":"k","timeout":"-1s"}`), false, "negative"},
			{"malformed JSON", "/stint.v1.JobService/Enqueue", []byte(`{"job":`), false, ""},
			{"unknown field", "/stint.v1.JobService/Enqueue", enqueue(`{"kind":"k","bogus":1}`), false, "bogus"},
			{"unknown state filter", "/stint.v1.JobService/ListJobs", []byte(`{"states":[42]}`), false, "42"},
		}
		want := 0
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				code, body := e.post(client, c.procedure, c.body)
				if c.ok {
					if code != http.StatusOK {
						t.Fatalf("status %d: %v", code, body)
					}
					want++
				} else {
					if code != http.StatusBadRequest || body["code"] != "invalid_argument" {
						t.Fatalf("status %d %v, want 400 invalid_argument", code, body)
					}
					if msg, _ := body["message"].(string); !strings.Contains(msg, c.says) {
						t.Fatalf("message %q does not name %q", msg, c.says)
					}
				}
				if n := e.count(); n != want {
					t.Fatalf("%d jobs in the store, want %d", n, want)
				}
			})
		}
	})
}
