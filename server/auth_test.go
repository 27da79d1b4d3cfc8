package server_test

import (
	"net/http"
	"testing"

	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/store"
)

// TestAuth: no token or a bad one is 401 and writes nothing; a token whose
// role may not call a service is 403 and writes nothing.
func TestAuth(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s store.Store) {
		e := start(t, s, server.Config{})
		worker, client, adm := e.token("acme", store.RoleWorker), e.token("acme", store.RoleClient), e.token("acme", store.RoleAdmin)
		enqueue := []byte(`{"job":{"kind":"k"}}`)
		cases := []struct {
			name, secret, procedure string
			body                    []byte
			want                    int
		}{
			{"no token", "", "/stint.v1.JobService/Enqueue", enqueue, http.StatusUnauthorized},
			{"unknown token", "stint_nope", "/stint.v1.JobService/Enqueue", enqueue, http.StatusUnauthorized},
			{"worker enqueues", worker, "/stint.v1.JobService/Enqueue", enqueue, http.StatusForbidden},
			{"client claims", client, "/stint.v1.WorkerService/Claim", []byte(`{"queues":["default"]}`), http.StatusForbidden},
			{"client makes a token", client, "/stint.v1.AdminService/CreateToken", []byte(`{"role":"ROLE_ADMIN"}`), http.StatusForbidden},
			{"worker lists tokens", worker, "/stint.v1.AdminService/ListTokens", []byte(`{}`), http.StatusForbidden},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				if code, body := e.post(c.secret, c.procedure, c.body); code != c.want {
					t.Fatalf("status %d, want %d: %v", code, c.want, body)
				}
				if n := e.count(); n != 0 {
					t.Fatalf("%d jobs written by a refused call", n)
				}
			})
		}
		t.Run("revoked token", func(t *testing.T) {
			code, body := e.post(adm, "/stint.v1.AdminService/CreateToken", []byte(`{"role":"ROLE_CLIENT","name":"temp"}`))
			if code != http.StatusOK {
				t.Fatalf("create token: %d %v", code, body)
			}
			secret, id := body["secret"].(string), body["token"].(map[string]any)["id"].(string)
			if code, _ := e.post(secret, "/stint.v1.JobService/ListJobs", []byte(`{}`)); code != http.StatusOK {
				t.Fatalf("new token refused: %d", code)
			}
			if code, body := e.post(adm, "/stint.v1.AdminService/RevokeToken", []byte(`{"id":"`+id+`"}`)); code != http.StatusOK {
				t.Fatalf("revoke: %d %v", code, body)
			}
			if code, _ := e.post(secret, "/stint.v1.JobService/ListJobs", []byte(`{}`)); code != http.StatusUnauthorized {
				t.Fatalf("revoked token: status %d, want 401", code)
			}
		})
		t.Run("client enqueues", func(t *testing.T) {
			if code, body := e.post(client, "/stint.v1.JobService/Enqueue", enqueue); code != http.StatusOK {
				t.Fatalf("status %d: %v", code, body)
			}
		})
	})
}
