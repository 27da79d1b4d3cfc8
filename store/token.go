package store

import (
	"context"
	"errors"
	"regexp"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// Role is what an API token may do on the server.
type Role string

// The roles of API tokens.
const (
	// RoleAdmin may do everything within its tenant.
	RoleAdmin Role = "admin"
	// RoleClient enqueues, reads and cancels jobs.
	RoleClient Role = "client"
	// RoleWorker claims jobs and reports on them.
	RoleWorker Role = "worker"
	// RoleReader reads its tenant's jobs, events, steps, runs, queues and
	// dead letters, and changes nothing: for dashboards, audits and
	// monitoring.
	RoleReader Role = "reader"
)

// Roles lists every role, for messages and usage.
const Roles = "admin, client, worker or reader"

// Valid reports whether r is one of the roles.
func (r Role) Valid() bool {
	return r == RoleAdmin || r == RoleClient || r == RoleWorker || r == RoleReader
}

// Token is an API token of the server. Its secret is never stored: only
// Hash, the hex sha256 of the secret, is.
type Token struct {
	ID        string     `json:"id"`
	Tenant    string     `json:"tenant"`
	Role      Role       `json:"role"`
	Name      string     `json:"name,omitempty"`
	Hash      string     `json:"-"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// TokenTx is implemented by a driver's Tx that keeps API tokens (a tokens
// table, migration 0004).
type TokenTx interface {
	TokenInsert(ctx context.Context, t Token) error
	// TokenByHash returns the token whose secret hashes to hash, revoked or not.
	TokenByHash(ctx context.Context, hash string) (Token, bool, error)
	// TokenList returns the tokens of tenant (every tenant when empty), by creation.
	TokenList(ctx context.Context, tenant string) ([]Token, error)
	// TokenRevoke sets revoked_at on the token id of tenant (any tenant when
	// empty) unless it is already revoked, and returns the token.
	TokenRevoke(ctx context.Context, tenant, id string, at time.Time) (Token, bool, error)
}

// Tokens keeps the server's API tokens. Every Store built by [New] on a
// driver whose Tx implements [TokenTx] is one; get it with [TokensOf].
type Tokens interface {
	// TokenCreate stores a token: ID, Tenant, Role and Hash are required.
	TokenCreate(ctx context.Context, t Token) (Token, error)
	// TokenByHash finds a live (unrevoked) token by the hash of its secret;
	// ErrNotFound otherwise.
	TokenByHash(ctx context.Context, hash string) (Token, error)
	// TokenList lists the tokens of tenant, or of every tenant when empty.
	TokenList(ctx context.Context, tenant string) ([]Token, error)
	// TokenRevoke revokes a token of tenant (any tenant when empty); revoking
	// twice is a no-op that returns the token.
	TokenRevoke(ctx context.Context, tenant, id string) (Token, error)
}

// TokensOf returns the token keeper of s, or ErrUnsupported when s keeps no
// tokens (a store that is not built by [New], such as a remote one).
func TokensOf(s Store) (Tokens, error) {
	if t, ok := As[Tokens](s); ok {
		return t, nil
	}
	return nil, ErrUnsupported
}

// tenantName is what a tenant may be called: it prefixes queue names on the
// server, so it is short and plain.
var tenantName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// ValidTenant returns an ErrValidation error unless name is a valid tenant name.
func ValidTenant(name string) error {
	if !tenantName.MatchString(name) {
		return lifecycle.Validationf("tenant %q: expected 1 to 63 lower-case letters, digits, '-' or '_', starting with a letter or digit", name)
	}
	return nil
}

func (e *engine) TokenCreate(ctx context.Context, t Token) (Token, error) {
	switch {
	case t.ID == "" || t.Hash == "":
		return Token{}, lifecycle.Validationf("a token needs an id and the hash of its secret")
	case !t.Role.Valid():
		return Token{}, lifecycle.Validationf("role %q: expected %s", t.Role, Roles)
	case len(t.Name) > 200:
		return Token{}, lifecycle.Validationf("token name is limited to 200 bytes")
	}
	if err := ValidTenant(t.Tenant); err != nil {
		return Token{}, err
	}
	err := e.d.InTx(ctx, func(tx Tx) error {
		tt, ok := tx.(TokenTx)
		if !ok {
			return ErrUnsupported
		}
		at, err := now(ctx, tx, nil)
		if err != nil {
			return err
		}
		t.CreatedAt, t.RevokedAt = at, nil
		return tt.TokenInsert(ctx, t)
	})
	return t, err
}

func (e *engine) TokenByHash(ctx context.Context, hash string) (Token, error) {
	var out Token
	err := e.d.Read(ctx, func(tx Tx) error {
		tt, ok := tx.(TokenTx)
		if !ok {
			return ErrUnsupported
		}
		t, found, err := tt.TokenByHash(ctx, hash)
		if err != nil {
			return err
		}
		if !found || t.RevokedAt != nil {
			return &lifecycle.Error{Kind: ErrNotFound, Msg: "no live token has this secret"}
		}
		out = t
		return nil
	})
	return out, err
}

func (e *engine) TokenList(ctx context.Context, tenant string) ([]Token, error) {
	var out []Token
	err := e.d.Read(ctx, func(tx Tx) error {
		tt, ok := tx.(TokenTx)
		if !ok {
			return ErrUnsupported
		}
		var err error
		out, err = tt.TokenList(ctx, tenant)
		return err
	})
	return out, err
}

func (e *engine) TokenRevoke(ctx context.Context, tenant, id string) (Token, error) {
	var out Token
	err := e.d.InTx(ctx, func(tx Tx) error {
		tt, ok := tx.(TokenTx)
		if !ok {
			return ErrUnsupported
		}
		at, err := now(ctx, tx, nil)
		if err != nil {
			return err
		}
		t, found, err := tt.TokenRevoke(ctx, tenant, id, at)
		if err != nil {
			return err
		}
		if !found {
			return &lifecycle.Error{Kind: ErrNotFound, Msg: "no token " + id + "; list them with `stint tokens ls`"}
		}
		out = t
		return nil
	})
	return out, err
}

// ErrTokenTaken is returned by a driver's TokenInsert on a duplicate id or
// hash. Both are random, so it never happens in practice; it is an error all
// the same, never an overwrite.
var ErrTokenTaken = errors.New("a token with this id or secret already exists")
