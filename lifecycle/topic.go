package lifecycle

import "strings"

// Topic patterns select jobs by topic, as NATS subjects do: a pattern is
// dot-separated tokens; "*" matches exactly one token, ">" matches one or
// more trailing tokens (and may only come last), and any other token matches
// itself. "job.chat.*" matches job.chat.simple but neither job.chat nor
// job.chat.a.b; "job.>" matches job.chat and job.chat.a.b but not job.
// A job without a topic matches no pattern.

// CheckTopicPattern refuses a pattern that is not dot-separated tokens, each
// a literal topic token, "*" or a last ">".
func CheckTopicPattern(p string) error {
	if err := CheckText("topic pattern", p); err != nil {
		return err
	}
	if len(p) > maxNameLen {
		return Validationf("topic pattern is %d bytes: the limit is %d", len(p), maxNameLen)
	}
	toks := strings.Split(p, ".")
	for i, tok := range toks {
		switch {
		case tok == "":
			return Validationf("topic pattern %q has an empty token: write dot-separated tokens like job.chat.* or job.>", p)
		case tok == ">" && i != len(toks)-1:
			return Validationf("topic pattern %q: > matches the remaining tokens, so it may only be the last token (job.>)", p)
		case tok == "*" || tok == ">":
		case strings.ContainsAny(tok, "*>"):
			return Validationf("topic pattern %q: * and > are whole tokens (job.*.simple), not parts of one", p)
		case strings.Contains(tok, " "):
			return Validationf("topic pattern %q contains a space: tokens are dot-separated, without spaces", p)
		}
	}
	return nil
}

// MatchTopic reports whether topic matches the valid pattern p.
func MatchTopic(p, topic string) bool {
	if topic == "" {
		return false
	}
	for {
		ptok, prest, pmore := strings.Cut(p, ".")
		if ptok == ">" {
			return true // topic still has at least one token here
		}
		ttok, trest, tmore := strings.Cut(topic, ".")
		if ptok != "*" && ptok != ttok {
			return false
		}
		if !pmore || !tmore {
			return pmore == tmore
		}
		p, topic = prest, trest
	}
}
