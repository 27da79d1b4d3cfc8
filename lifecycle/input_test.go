package lifecycle_test

import (
	"strings"
	"testing"

	"github.com/stint-dev/stint/lifecycle"
)

// TestCheckJSONAccepts: the depth limit counts arrays and objects, not
// brackets inside strings, and JSON at the limit is accepted.
func TestCheckJSONAccepts(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		strings.Repeat("[", lifecycle.MaxJSONDepth) + strings.Repeat("]", lifecycle.MaxJSONDepth),
		`{"s":"` + strings.Repeat("[{", 100) + `\"]"}`,
		`"héllo ☃"`,
		`null`,
	} {
		if err := lifecycle.CheckJSON("payload", []byte(in)); err != nil {
			t.Errorf("CheckJSON(%.40q): %v", in, err)
		}
	}
}

// TestCommandFreeTextIsCleaned: a failure message with a NUL byte and
// invalid UTF-8 is recorded with U+FFFD in their place, not refused.
func TestCommandFreeTextIsCleaned(t *testing.T) {
	t.Parallel()
	w := reach(t, baseSpec(), lifecycle.Running)
	lease := w.job.LeaseID
	c := failCmd(lease, "io\x00", lifecycle.ClassTransient)
	c.Error.Message = "bad \xff byte"
	w.must(t, c)
	if e := w.job.LastError; e.Code != "io\uFFFD" || e.Message != "bad \uFFFD byte" {
		t.Errorf("recorded %+v", e)
	}
	c = ownerCmd(lifecycle.OpHeartbeat, lease)
	c.RequestID = "r\x00"
	if _, err := lifecycle.Apply(w.job, c, w.now); err == nil || !strings.Contains(err.Error(), "request id contains a NUL byte") {
		t.Errorf("a request id with a NUL byte: %v", err)
	}
}

// TestCheckNameAccepts: the name alphabet takes letters (any script),
// digits and . _ - : /.
func TestCheckNameAccepts(t *testing.T) {
	t.Parallel()
	for _, n := range []string{"email.send", "billing/eu-1", "v2:resize", "snake_case", "résumé", "默认"} {
		if err := lifecycle.CheckName("kind", n); err != nil {
			t.Errorf("CheckName(%q): %v", n, err)
		}
	}
}
