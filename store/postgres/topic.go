package postgres

import (
	"regexp"
	"strings"
)

// topicRegexps translates valid topic patterns (lifecycle.CheckTopicPattern)
// into anchored PostgreSQL regular expressions, so the claim query filters
// topics in its walk of the claim index: a literal token matches itself, "*"
// one token (no dot) and ">" the rest (one or more tokens). Topics have no
// empty tokens, so ".+" after a dot is one or more whole tokens.
// lifecycle.MatchTopic is the reference; the conformance tests hold both to
// one table.
func topicRegexps(patterns []string) []string {
	out := make([]string, len(patterns))
	for i, p := range patterns {
		toks := strings.Split(p, ".")
		for j, tok := range toks {
			switch tok {
			case "*":
				toks[j] = `[^.]+`
			case ">":
				toks[j] = `.+`
			default:
				// QuoteMeta escapes only punctuation with a backslash,
				// which PostgreSQL's regular expressions read alike.
				toks[j] = regexp.QuoteMeta(tok)
			}
		}
		out[i] = `^` + strings.Join(toks, `\.`) + `$`
	}
	return out
}
