package server_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/stint-dev/stint/lifecycle"
	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/store"
)

// principalRow is one caller of the authorization table.
type principalRow struct {
	name   string
	tenant string // "" for no token
	role   store.Role
	secret string
}

// wholeDatabase are the admin methods only an admin of the default tenant
// may call: what they touch has no tenant.
var wholeDatabase = []string{"AddWebhook", "ListWebhooks", "RemoveWebhook", "TestWebhook", "ListOutbox", "ReplayOutbox",
	"PutSchedule", "ListSchedules", "DeleteSchedule", "PauseSchedule"}

// serviceRoles is who may call each service (server/auth.go's table).
var serviceRoles = map[string][]store.Role{
	"stint.v1.JobService":    {store.RoleAdmin, store.RoleClient},
	"stint.v1.RunService":    {store.RoleAdmin, store.RoleClient},
	"stint.v1.WorkerService": {store.RoleAdmin, store.RoleWorker},
	"stint.v1.AdminService":  {store.RoleAdmin},
}

// readerMethods are the only methods a reader token may call: the reads
// of its tenant's jobs, runs, queues and dead letters.
var readerMethods = []string{"GetJob", "ListJobs", "ListEvents", "ListSteps", "GetRun", "ListRuns", "ListRunEvents",
	"QueueDepth", "DeadLetters", "ListQueues"}

// TestAuthorizationTable calls every RPC of every service as each of: no
// token, a revoked token, and admin, client, worker and reader tokens of
// the default tenant and of another tenant (acme), with requests that name
// the default tenant's job, run, lease, queue, schedule, webhook and
// tokens. It checks, on both backends:
//   - no token and a revoked token are refused as unauthenticated;
//   - a role the service does not admit is refused as permission_denied,
//     with a message naming the roles that may call it;
//   - a reader may call the read methods (readerMethods) and no other;
//   - the whole-database methods refuse every tenant's admin but the default's;
//   - acme's allowed calls never answer with the default tenant's data and
//     change none of it (the job stays queued, the lease held, the queue
//     paused, the schedule and the tokens as they were).
func TestAuthorizationTable(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s store.Store) {
		e := start(t, s, server.Config{})
		w := seedDefaultTenant(t, e)
		revoked := e.token(server.DefaultTenant, store.RoleAdmin)
		keeper, _ := store.TokensOf(s)
		toks, _ := keeper.TokenList(t.Context(), server.DefaultTenant)
		for _, tk := range toks {
			if tk.Hash == server.HashSecret(revoked) {
				if _, err := keeper.TokenRevoke(t.Context(), "", tk.ID); err != nil {
					t.Fatal(err)
				}
			}
		}
		rows := []principalRow{{name: "no token"}, {name: "revoked", tenant: server.DefaultTenant, role: store.RoleAdmin, secret: revoked}}
		for _, tenant := range []string{server.DefaultTenant, "acme"} {
			for _, role := range []store.Role{store.RoleAdmin, store.RoleClient, store.RoleWorker, store.RoleReader} {
				rows = append(rows, principalRow{name: tenant + " " + string(role), tenant: tenant, role: role, secret: e.token(tenant, role)})
			}
		}
		// Every row but the default tenant's allowed calls first: those
		// may change what the checks below compare.
		var later []func(t *testing.T)
		for _, svc := range services() {
			for i := range svc.Methods().Len() {
				m := svc.Methods().Get(i)
				procedure := "/" + string(svc.FullName()) + "/" + string(m.Name())
				body := w.body(m)
				for _, p := range rows {
					want := expect(p, svc, m)
					run := func(t *testing.T) {
						code, reply := call(t, e.url+procedure, p.secret, body, m.IsStreamingServer())
						switch {
						case want != "" && code != want:
							t.Errorf("%s as %s: code %q, want %q (%s)", procedure, p.name, code, want, reply)
						case want == "" && (code == "unauthenticated" || code == "permission_denied"):
							t.Errorf("%s as %s: refused with %q (%s)", procedure, p.name, code, reply)
						case want == "permission_denied" && p.role == store.RoleReader && !strings.Contains(reply, "it needs an admin"):
							t.Errorf("%s as %s: the refusal does not name the role needed: %s", procedure, p.name, reply)
						}
						if p.tenant == "acme" {
							w.noLeak(t, procedure, string(body), reply)
						}
					}
					name := string(m.Name()) + "/" + p.name
					if p.tenant == server.DefaultTenant && want == "" {
						later = append(later, func(t *testing.T) { t.Run(name, run) })
						continue
					}
					t.Run(name, run)
				}
			}
		}
		w.unchanged(t)
		for _, f := range later {
			f(t)
		}
	})
}

// expect is the code a call must get: "" where it is allowed (any answer
// but unauthenticated or permission_denied).
func expect(p principalRow, svc protoreflect.ServiceDescriptor, m protoreflect.MethodDescriptor) string {
	switch {
	case p.secret == "" || p.name == "revoked":
		return "unauthenticated"
	case p.role == store.RoleReader && !slices.Contains(readerMethods, string(m.Name())):
		return "permission_denied"
	case p.role != store.RoleReader && !slices.Contains(serviceRoles[string(svc.FullName())], p.role):
		return "permission_denied"
	case p.tenant != server.DefaultTenant && slices.Contains(wholeDatabase, string(m.Name())):
		return "permission_denied"
	case p.tenant != server.DefaultTenant && m.Name() == "LimitQueue":
		return "permission_denied" // its request names a kind's limit, which spans tenants
	}
	return ""
}

func services() []protoreflect.ServiceDescriptor {
	var out []protoreflect.ServiceDescriptor
	for _, f := range []protoreflect.FileDescriptor{stintv1.File_stint_v1_jobs_proto, stintv1.File_stint_v1_runs_proto,
		stintv1.File_stint_v1_worker_proto, stintv1.File_stint_v1_admin_proto} {
		for i := range f.Services().Len() {
			out = append(out, f.Services().Get(i))
		}
	}
	return out
}

// call posts body to url as Connect JSON (enveloped for a server stream)
// and returns the error code ("" for success) and the reply.
func call(t *testing.T, url, secret string, body []byte, stream bool) (string, string) {
	t.Helper()
	ctype := "application/json"
	if stream {
		ctype = "application/connect+json"
		var env bytes.Buffer
		env.WriteByte(0)
		_ = binary.Write(&env, binary.BigEndian, uint32(len(body)))
		env.Write(body)
		body = env.Bytes()
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ctype)
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if stream {
		// A refused stream ends at once with an end-of-stream error; an
		// admitted one stays open for notices: its first frame is enough.
		var head [5]byte
		if _, err := io.ReadFull(resp.Body, head[:]); err != nil {
			t.Fatalf("stream: %v", err)
		}
		msg := make([]byte, binary.BigEndian.Uint32(head[1:]))
		_, _ = io.ReadFull(resp.Body, msg)
		var end struct {
			Error struct{ Code string } `json:"error"`
		}
		if head[0]&2 != 0 && json.Unmarshal(msg, &end) == nil {
			return end.Error.Code, string(msg)
		}
		return "", string(msg)
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode == http.StatusOK {
		return "", string(b)
	}
	var e struct{ Code string }
	_ = json.Unmarshal(b, &e)
	return e.Code, string(b)
}

// world is what the default tenant owns, for requests to name and checks
// to find.
type world struct {
	e                              *env
	job, claimed, lease, run, hook string
	tokenIDs                       []string
	marker                         string
}

func seedDefaultTenant(t *testing.T, e *env) *world {
	t.Helper()
	w := &world{e: e, marker: "MARKER-default-7d1f"}
	ctx := t.Context()
	res, err := e.s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{
		{Kind: "secret.kind", Queue: "secretq", Payload: json.RawMessage(`{"m":"` + w.marker + `"}`)},
		{Kind: "secret.kind", Queue: "leased", Payload: json.RawMessage(`{"m":"` + w.marker + `"}`)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	w.job, w.claimed = res[0].Job.ID, res[1].Job.ID
	jobs, err := e.s.JobClaim(ctx, &store.JobClaimParams{WorkerID: "default-worker", Queues: []string{"leased"}, Limit: 1, LeaseTTL: time.Hour})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %v %d", err, len(jobs))
	}
	w.lease = jobs[0].LeaseID
	run, err := e.s.RunCreate(ctx, &store.RunCreateParams{Run: lifecycle.RunSpec{Name: w.marker}, Jobs: []store.RunJobSpec{{Name: "a", Spec: lifecycle.Spec{Kind: "secret.kind", Queue: "runq"}}}})
	if err != nil {
		t.Fatal(err)
	}
	w.run = run.Run.ID
	qs, _ := store.Queues(e.s)
	if _, err := qs.QueuePause(ctx, "secretq", true); err != nil {
		t.Fatal(err)
	}
	ss, _ := store.Schedules(e.s)
	if _, err := ss.SchedulePut(ctx, store.Schedule{Name: "sched-default", Expr: "0 2 * * *", Kind: "secret.kind", Payload: json.RawMessage(`{"m":"` + w.marker + `"}`)}); err != nil {
		t.Fatal(err)
	}
	hook, err := e.s.WebhookAdd(ctx, store.Webhook{URL: "http://127.0.0.1:1/" + w.marker, Secret: "whsec_0123456789abcdef0123"})
	if err != nil {
		t.Fatal(err)
	}
	w.hook = hook.ID
	e.token(server.DefaultTenant, store.RoleClient) // a spare token for RevokeToken to name
	keeper, _ := store.TokensOf(e.s)
	toks, _ := keeper.TokenList(ctx, server.DefaultTenant)
	for _, tk := range toks {
		w.tokenIDs = append(w.tokenIDs, tk.ID)
	}
	return w
}

// body is a request of m that names the default tenant's things.
func (w *world) body(m protoreflect.MethodDescriptor) []byte {
	in := m.Input()
	fields := map[string]any{}
	svc := m.Parent().(protoreflect.ServiceDescriptor).Name()
	has := func(name string) bool { return in.Fields().ByName(protoreflect.Name(name)) != nil }
	switch {
	case has("owner"):
		fields["owner"] = map[string]any{"job_id": w.claimed, "lease_id": w.lease}
	case has("completions"):
		fields["completions"] = []any{map[string]any{"owner": map[string]any{"job_id": w.claimed, "lease_id": w.lease}}}
	}
	if has("job_id") {
		fields["job_id"] = w.job
	}
	if has("run_id") {
		fields["run_id"] = w.run
	}
	if has("queues") && svc == "WorkerService" {
		fields["queues"] = []string{"secretq", "leased", "runq"}
	}
	if has("id") {
		switch svc {
		case "JobService":
			fields["id"] = w.job
		case "RunService":
			fields["id"] = w.run
		case "AdminService":
			fields["id"] = w.hook
			if strings.Contains(string(m.Name()), "Token") {
				fields["id"] = w.tokenIDs[len(w.tokenIDs)-1]
			}
			if m.Name() == "ReplayOutbox" {
				fields["id"] = 1
			}
		}
	}
	if has("name") {
		switch {
		case strings.Contains(string(m.Name()), "Schedule"):
			fields["name"] = "sched-default"
		case m.Name() == "LimitQueue":
			fields["name"] = store.KindLimitName("secret.kind")
			fields["rate_limit"] = 1
			fields["rate_interval"] = "1s"
		case strings.Contains(string(m.Name()), "Queue"):
			fields["name"] = "secretq"
		}
	}
	if m.Name() == "PauseQueue" || m.Name() == "PauseSchedule" {
		fields["paused"] = false
	}
	b, _ := json.Marshal(fields)
	return b
}

// noLeak fails if another tenant's reply carries the default tenant's
// ids or data, other than what its own request named (a not-found error
// echoes the id asked for; a tenant's own queue may share a name).
func (w *world) noLeak(t *testing.T, procedure, request, reply string) {
	t.Helper()
	for _, secret := range append([]string{w.marker, w.job, w.claimed, w.lease, w.run, w.hook, "sched-default", "secretq", "secret.kind"}, w.tokenIDs...) {
		if strings.Contains(reply, secret) && !strings.Contains(request, secret) {
			t.Errorf("%s answered another tenant with the default tenant's %q: %s", procedure, secret, reply)
		}
	}
}

// unchanged checks that no call of another tenant changed the default
// tenant's things.
func (w *world) unchanged(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	for id, state := range map[string]lifecycle.State{w.job: lifecycle.Queued, w.claimed: lifecycle.Claimed} {
		j, err := w.e.s.JobGet(ctx, id)
		if err != nil || j.State != state {
			t.Errorf("job %s is %s (%v), want %s", id, j.State, err, state)
		}
		if id == w.claimed && j.LeaseID != w.lease {
			t.Errorf("the default worker's lease changed hands")
		}
	}
	if n := w.e.count(); n != 3 {
		t.Errorf("%d jobs in the store, want the 3 seeded", n)
	}
	qs, _ := store.Queues(w.e.s)
	set, _ := qs.QueueSettingsList(ctx)
	for _, q := range set {
		if q.Name == "secretq" && !q.Paused {
			t.Error("the default tenant's queue was resumed")
		}
		if strings.HasPrefix(q.Name, store.KindLimitName("")) {
			t.Errorf("a kind limit was set: %+v", q)
		}
	}
	ss, _ := store.Schedules(w.e.s)
	if sc, err := ss.ScheduleGet(ctx, "sched-default"); err != nil || sc.Paused {
		t.Errorf("the schedule: %+v %v", sc, err)
	}
	keeper, _ := store.TokensOf(w.e.s)
	toks, _ := keeper.TokenList(ctx, "")
	for _, tk := range toks {
		if slices.Contains(w.tokenIDs, tk.ID) && tk.RevokedAt != nil {
			t.Errorf("token %s was revoked", tk.ID)
		}
	}
}
