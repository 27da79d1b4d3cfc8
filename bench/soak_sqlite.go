package bench

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"net/url"
	"os"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// liteObserver observes a SQLite file from a connection of its own.
type liteObserver struct{ path string }

// SQLiteObserver returns the [Observer] of the SQLite file at path: its long
// transaction is a reader on another connection, which keeps checkpoints from
// passing its snapshot; its figures are the database and WAL files' sizes.
func SQLiteObserver(path string) Observer { return &liteObserver{path: path} }

func (o *liteObserver) Hold(ctx context.Context) (func() error, error) {
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: o.path}).EscapedPath()+"?_pragma=busy_timeout(10000)&_pragma=query_only(1)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err == nil {
		// A deferred transaction takes its snapshot at its first read of
		// the database, which needs a table.
		var n int
		err = tx.QueryRowContext(ctx, "SELECT count(*) FROM (SELECT 1 FROM jobs LIMIT 1)").Scan(&n)
	}
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	return func() error { return errors.Join(tx.Rollback(), db.Close()) }, nil
}

func (o *liteObserver) Storage(context.Context) (Storage, error) {
	db, err := fileSize(o.path)
	if err != nil {
		return Storage{}, err
	}
	wal, err := fileSize(o.path + "-wal")
	return Storage{DBBytes: db, WALBytes: wal}, err
}

func (o *liteObserver) Close() error { return nil }

// fileSize is the size of the file at path, 0 when there is none.
func fileSize(path string) (int64, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
