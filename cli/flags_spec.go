package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/stint-dev/stint/lifecycle"
)

// Flags of enqueue that fill a job spec's less common fields.

// payloadFlag reads a JSON payload given inline, from a file (@FILE) or
// from stdin (-), so a payload over the OS's argument limit can be given.
type payloadFlag struct {
	raw   *json.RawMessage
	stdin io.Reader
}

func (f payloadFlag) String() string {
	if f.raw == nil {
		return ""
	}
	return string(*f.raw)
}

func (f payloadFlag) Set(s string) error {
	b, from := []byte(s), ""
	switch {
	case s == "-":
		from = "stdin"
		var err error
		if b, err = readLimited(f.stdin); err != nil {
			return fmt.Errorf("read the payload from stdin: %v", err)
		}
	case strings.HasPrefix(s, "@"):
		from = s[1:]
		file, err := os.Open(from)
		if err != nil {
			return fmt.Errorf("read the payload from %s: %v", from, errors.Unwrap(err))
		}
		defer file.Close()
		if b, err = readLimited(file); err != nil {
			return fmt.Errorf("read the payload from %s: %v", from, err)
		}
	}
	if len(b) > lifecycle.MaxPayloadBytes {
		return fmt.Errorf("the payload is over the limit of %d bytes: store large inputs elsewhere and pass --context-ptr", lifecycle.MaxPayloadBytes)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		if from != "" {
			return fmt.Errorf("the payload in %s is not a JSON document (%v)", from, err)
		}
		return fmt.Errorf("expected a JSON document such as '{\"n\": 1}', @FILE or - (%v)", err)
	}
	*f.raw = json.RawMessage(b)
	return nil
}

func (payloadFlag) Type() string { return "json|@file|-" }

// readLimited reads r up to one byte over the payload limit.
func readLimited(r io.Reader) ([]byte, error) {
	if r == nil {
		return nil, errors.New("no stdin")
	}
	return io.ReadAll(io.LimitReader(r, lifecycle.MaxPayloadBytes+1))
}

// envFlag reads KEY=VALUE pairs into a map, one per use or comma-free.
type envFlag struct{ m *map[string]string }

func (f envFlag) String() string {
	if f.m == nil || len(*f.m) == 0 {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(*f.m)) {
		parts = append(parts, k+"="+(*f.m)[k])
	}
	return strings.Join(parts, ",")
}

func (f envFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return errors.New("expected KEY=VALUE, such as locale=de; repeat --env for more")
	}
	if *f.m == nil {
		*f.m = map[string]string{}
	}
	if _, dup := (*f.m)[k]; dup {
		return fmt.Errorf("env key %q is given twice", k)
	}
	(*f.m)[k] = v
	return nil
}

func (envFlag) Type() string { return "key=value" }

// onExhaustedFlag reads where a job goes when its attempts run out.
type onExhaustedFlag struct{ s *lifecycle.State }

func (f onExhaustedFlag) String() string {
	if f.s == nil {
		return ""
	}
	return string(*f.s)
}

func (f onExhaustedFlag) Set(s string) error {
	switch st := lifecycle.State(s); st {
	case lifecycle.DeadLettered, lifecycle.Failed:
		*f.s = st
		return nil
	}
	return errors.New("expected dead_lettered or failed")
}

func (onExhaustedFlag) Type() string { return "state" }

// int64Flag reads a positive 64-bit integer.
type int64Flag struct{ p *int64 }

func (f int64Flag) String() string {
	if f.p == nil || *f.p == 0 {
		return ""
	}
	return strconv.FormatInt(*f.p, 10)
}

func (f int64Flag) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 {
		return errors.New("expected a positive integer")
	}
	*f.p = n
	return nil
}

func (int64Flag) Type() string { return "int" }
