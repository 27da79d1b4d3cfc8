package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stint-dev/stint/store"
)

var _ store.TokenTx = (*txn)(nil)

const (
	qTokenInsert = `INSERT INTO tokens (id, tenant, role, name, hash, created_at) VALUES (?, ?, ?, ?, ?, ?)`
	qTokenCols   = `SELECT id, tenant, role, name, hash, created_at, revoked_at FROM tokens`
	qTokenByHash = qTokenCols + ` WHERE hash = ?`
	qTokenList   = qTokenCols + ` WHERE ?1 = '' OR tenant = ?1 ORDER BY created_at, id`
	qTokenRevoke = `UPDATE tokens SET revoked_at = coalesce(revoked_at, ?3) WHERE id = ?1 AND (?2 = '' OR tenant = ?2)`
	qTokenByID   = qTokenCols + ` WHERE id = ?`
)

func (t *txn) TokenInsert(ctx context.Context, tok store.Token) error {
	_, err := t.q.ExecContext(t.stmtCtx(ctx), qTokenInsert, tok.ID, tok.Tenant, string(tok.Role), tok.Name, tok.Hash, micros(tok.CreatedAt))
	if err != nil && strings.Contains(err.Error(), "UNIQUE") {
		return store.ErrTokenTaken
	}
	return err
}

func (t *txn) TokenByHash(ctx context.Context, hash string) (store.Token, bool, error) {
	return scanToken(t.q.QueryRowContext(t.stmtCtx(ctx), qTokenByHash, hash))
}

func (t *txn) TokenList(ctx context.Context, tenant string) ([]store.Token, error) {
	rows, err := t.q.QueryContext(t.stmtCtx(ctx), qTokenList, tenant)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list tokens: %w", err)
	}
	defer rows.Close()
	var out []store.Token
	for rows.Next() {
		tok, _, err := scanToken(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, tok)
	}
	return out, rows.Err()
}

func (t *txn) TokenRevoke(ctx context.Context, tenant, id string, at time.Time) (store.Token, bool, error) {
	res, err := t.q.ExecContext(t.stmtCtx(ctx), qTokenRevoke, id, tenant, micros(at))
	if err != nil {
		return store.Token{}, false, fmt.Errorf("sqlite: revoke token: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return store.Token{}, false, nil
	}
	return scanToken(t.q.QueryRowContext(t.stmtCtx(ctx), qTokenByID, id))
}

func scanToken(r interface{ Scan(...any) error }) (store.Token, bool, error) {
	var (
		tok     store.Token
		role    string
		created int64
		revoked sql.NullInt64
	)
	err := r.Scan(&tok.ID, &tok.Tenant, &role, &tok.Name, &tok.Hash, &created, &revoked)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Token{}, false, nil
	}
	if err != nil {
		return store.Token{}, false, fmt.Errorf("sqlite: read token: %w", err)
	}
	tok.Role, tok.CreatedAt = store.Role(role), time.UnixMicro(created).UTC()
	if revoked.Valid {
		at := time.UnixMicro(revoked.Int64).UTC()
		tok.RevokedAt = &at
	}
	return tok, true, nil
}
