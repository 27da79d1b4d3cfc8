package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stint-dev/stint/store"
)

var _ store.TokenTx = (*tx)(nil)

const (
	qTokenInsert = `INSERT INTO tokens (id, tenant, role, name, hash, created_at) VALUES ($1, $2, $3, $4, $5, $6)`
	qTokenCols   = `SELECT id, tenant, role, name, hash, created_at, revoked_at FROM tokens`
	qTokenByHash = qTokenCols + ` WHERE hash = $1`
	qTokenList   = qTokenCols + ` WHERE $1 = '' OR tenant = $1 ORDER BY created_at, id`
	qTokenRevoke = `UPDATE tokens SET revoked_at = coalesce(revoked_at, $3) WHERE id = $1 AND ($2 = '' OR tenant = $2)
    RETURNING id, tenant, role, name, hash, created_at, revoked_at`
)

// TokenInsert stores a token; see store.TokenTx.
func (t *tx) TokenInsert(ctx context.Context, tok store.Token) error {
	_, err := t.exec(ctx, qTokenInsert, tok.ID, tok.Tenant, string(tok.Role), tok.Name, tok.Hash, tok.CreatedAt)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return store.ErrTokenTaken
	}
	if err != nil {
		return fmt.Errorf("postgres: insert token: %w", err)
	}
	return nil
}

// TokenByHash finds a token by the hash of its secret.
func (t *tx) TokenByHash(ctx context.Context, hash string) (store.Token, bool, error) {
	var tok store.Token
	found, err := t.tokenRow(ctx, &tok, qTokenByHash, hash)
	return tok, found, err
}

// TokenList lists the tokens of tenant, or all when tenant is empty.
func (t *tx) TokenList(ctx context.Context, tenant string) ([]store.Token, error) {
	var out []store.Token
	q := &pgx.QueuedQuery{SQL: qTokenList, Arguments: []any{tenant}}
	q.Query(func(rows pgx.Rows) error {
		for rows.Next() {
			tok, _, err := scanToken(rows)
			if err != nil {
				return err
			}
			out = append(out, tok)
		}
		return rows.Err()
	})
	if err := t.send(ctx, q); err != nil {
		return nil, fmt.Errorf("postgres: list tokens: %w", err)
	}
	return out, nil
}

// TokenRevoke revokes a token; see store.TokenTx.
func (t *tx) TokenRevoke(ctx context.Context, tenant, id string, at time.Time) (store.Token, bool, error) {
	var tok store.Token
	found, err := t.tokenRow(ctx, &tok, qTokenRevoke, id, tenant, at)
	return tok, found, err
}

// tokenRow runs a query of at most one token row and scans it into tok.
func (t *tx) tokenRow(ctx context.Context, tok *store.Token, sql string, args ...any) (bool, error) {
	var found bool
	q := &pgx.QueuedQuery{SQL: sql, Arguments: args}
	q.Query(func(rows pgx.Rows) error {
		if !rows.Next() {
			return rows.Err()
		}
		var err error
		*tok, found, err = scanToken(rows)
		return err
	})
	if err := t.send(ctx, q); err != nil {
		return false, fmt.Errorf("postgres: read token: %w", err)
	}
	return found, nil
}

func scanToken(r pgx.Row) (store.Token, bool, error) {
	var (
		tok     store.Token
		role    string
		revoked *time.Time
	)
	err := r.Scan(&tok.ID, &tok.Tenant, &role, &tok.Name, &tok.Hash, &tok.CreatedAt, &revoked)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Token{}, false, nil
	}
	if err != nil {
		return store.Token{}, false, fmt.Errorf("postgres: read token: %w", err)
	}
	tok.Role, tok.CreatedAt = store.Role(role), tok.CreatedAt.UTC()
	if revoked != nil {
		at := revoked.UTC()
		tok.RevokedAt = &at
	}
	return tok, true, nil
}
