package cli_test

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stint-dev/stint/cli"
)

// TestDevServesMetricsAndStats runs stint dev and scrapes /metrics and
// /stats beside its API while it works its demo jobs.
func TestDevServesMetricsAndStats(t *testing.T) {
	t.Parallel()
	d := startDev(t, "--db", newDB(t), "dev", "--shutdown-grace", "0", "--api", "127.0.0.1:0")
	apiURL := regexp.MustCompile(`API on (http://\S+),`)
	var base string
	eventually(t, "the API address", func() bool {
		m := apiURL.FindStringSubmatch(d.out.String())
		if m != nil {
			base = m[1]
		}
		return m != nil
	})
	eventually(t, "claims and run times in /metrics", func() bool {
		body := get(t, base+"/metrics")
		return strings.Contains(body, "stint_claims_total{") && strings.Contains(body, "stint_run_seconds_bucket{") &&
			strings.Contains(body, `stint_pool_workers_capacity{pool="local"}`)
	})
	eventually(t, "the dead-lettered demo job in /stats", func() bool {
		return strings.Contains(get(t, base+"/stats"), `"dead_lettered":1`)
	})
}

func get(t *testing.T, url string) string {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", url, res.Status, b)
	}
	return string(b)
}

// TestWorkerServesMetrics runs stint worker with --metrics-listen and
// scrapes its pool gauges.
func TestWorkerServesMetrics(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	env := cli.Env{Stdout: out, Stderr: &syncBuffer{}, Getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, []string{"--db", migratedDB(t), "worker", "--metrics-listen", "127.0.0.1:0", "--queues", "default=3", "--exec", "--", "true"}, env)
	}()
	defer func() { cancel(); <-done }()
	re := regexp.MustCompile(`metrics on (http://\S+)`)
	var url string
	eventually(t, "the metrics address", func() bool {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			url = m[1]
		}
		return url != ""
	})
	if body := get(t, url); !strings.Contains(body, `stint_pool_workers_capacity{pool="worker"} 3`) {
		t.Errorf("/metrics lacks the pool's capacity:\n%s", body)
	}
}
