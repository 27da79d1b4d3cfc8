package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgCPU reads the CPU of a PostgreSQL server on this machine from /proc:
// the backends whose application_name is app, and the whole cluster.
type pgCPU struct {
	conn *pgx.Conn
	app  string
	// postmaster is the cluster's postmaster pid, 0 when unknown.
	postmaster int
}

// PostgresCPU returns the [ServerCPU] of the PostgreSQL server at url, for
// the backends whose application_name is app (stint's driver names its
// connections "stint/<schema>"). It holds a connection of its own, whose
// backend is not counted among app's. Close it with the returned function.
// When the server is not on this machine the probe reports nothing.
func PostgresCPU(ctx context.Context, url, app string) (ServerCPU, func(), error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, nil, fmt.Errorf("bench: connect to read the server's CPU: %w", err)
	}
	p := &pgCPU{conn: conn, app: app}
	var dir string
	// data_directory needs pg_read_all_settings; without it only the
	// backends are measured.
	if conn.QueryRow(ctx, `SELECT current_setting('data_directory')`).Scan(&dir) == nil {
		if b, err := os.ReadFile(filepath.Join(dir, "postmaster.pid")); err == nil {
			line, _, _ := bytes.Cut(b, []byte("\n"))
			if pid, err := strconv.Atoi(string(bytes.TrimSpace(line))); err == nil && isPostgres(pid) {
				p.postmaster = pid
			}
		}
	}
	return p, func() { _ = conn.Close(context.WithoutCancel(ctx)) }, nil
}

func (p *pgCPU) ServerCPU(ctx context.Context) (backends, cluster time.Duration, ok bool) {
	rows, err := p.conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, p.app)
	if err != nil {
		return 0, 0, false
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return 0, 0, false
	}
	for _, pid := range pids {
		st, ok := procStat(int(pid))
		if !ok || st.comm != "postgres" {
			return 0, 0, false // not on this machine
		}
		backends += st.cpu
	}
	if p.postmaster != 0 {
		cluster = clusterCPU(p.postmaster)
	}
	return backends, cluster, true
}

// clusterCPU is the CPU of the postmaster, of its live children, and of
// the children that have exited (the postmaster's cutime and cstime).
func clusterCPU(postmaster int) time.Duration {
	st, ok := procStat(postmaster)
	if !ok {
		return 0
	}
	total := st.cpu + st.childCPU
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if c, ok := procStat(pid); ok && c.ppid == postmaster {
			total += c.cpu
		}
	}
	return total
}

// stat is what procStat reads of /proc/<pid>/stat.
type stat struct {
	comm          string
	ppid          int
	cpu, childCPU time.Duration
}

// clockTick is USER_HZ, the unit of /proc's times: 100 on every Linux ABI.
const clockTick = 10 * time.Millisecond

// procStat reads a process's name, parent and CPU times from /proc.
func procStat(pid int) (stat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, false
	}
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open || end+2 > len(b) {
		return stat{}, false
	}
	f := bytes.Fields(b[end+2:])
	if len(f) < 15 {
		return stat{}, false
	}
	n := func(i int) int64 { v, _ := strconv.ParseInt(string(f[i]), 10, 64); return v }
	return stat{
		comm:     string(b[open+1 : end]),
		ppid:     int(n(1)),
		cpu:      time.Duration(n(11)+n(12)) * clockTick,
		childCPU: time.Duration(n(13)+n(14)) * clockTick,
	}, true
}

func isPostgres(pid int) bool {
	st, ok := procStat(pid)
	return ok && (st.comm == "postgres" || st.comm == "postmaster")
}
