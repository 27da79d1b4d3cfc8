package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// devHandler prints log records the way stint dev narrates:
//
//	15:04:05.000 maintenance/reaper: reaped jobs whose lease expired stalled=1
//
// the component (and service) first, then the message and the other
// attributes; warnings and errors say so.
type devHandler struct {
	out    io.Writer
	level  slog.Level
	source string // component[/service]
	attrs  string // " k=v ..." from With
	group  string // key prefix from WithGroup
}

// devLogger returns a logger printing records from level up on out.
func devLogger(out io.Writer, level slog.Level) *slog.Logger {
	return slog.New(&devHandler{out: out, level: level})
}

func (h *devHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *devHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Time.Format("15:04:05.000"))
	if r.Level >= slog.LevelWarn {
		b.WriteString(" " + r.Level.String())
	}
	source, attrs := h.source, h.attrs
	r.Attrs(func(a slog.Attr) bool {
		source, attrs = h.add(source, attrs, a)
		return true
	})
	if source != "" {
		b.WriteString(" " + source + ":")
	}
	b.WriteString(" " + strings.TrimPrefix(r.Message, "stint: "))
	b.WriteString(attrs)
	b.WriteString("\n")
	_, err := io.WriteString(h.out, b.String())
	return err
}

// add folds a into the source (component, service) or the attributes.
func (h *devHandler) add(source, attrs string, a slog.Attr) (string, string) {
	a.Value = a.Value.Resolve()
	switch {
	case h.group == "" && a.Key == "component":
		return a.Value.String(), attrs
	case h.group == "" && a.Key == "service" && source != "":
		return source + "/" + a.Value.String(), attrs
	case a.Key == "":
		return source, attrs
	}
	v := a.Value.String()
	if strings.ContainsAny(v, " \t\n\"=") || v == "" {
		v = fmt.Sprintf("%q", v)
	}
	return source, attrs + " " + h.group + a.Key + "=" + v
}

func (h *devHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	for _, a := range as {
		c.source, c.attrs = c.add(c.source, c.attrs, a)
	}
	return &c
}

func (h *devHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.group += name + "."
	return &c
}
