package cli

import (
	"path"
	"slices"
	"strings"
)

// baseEnv names the variables every command of `stint worker --exec` gets
// from the worker's environment (when set there): enough to find programs,
// a home, a locale, a time zone and a temporary directory, and nothing that
// could be a secret.
var baseEnv = []string{"PATH", "HOME", "LANG", "TZ", "TMPDIR"}

// secretEnv names variables that hold credentials to stint itself or to
// its database. They reach a command only when --pass-env names them
// exactly: neither a glob nor --pass-env-all passes them.
var secretEnv = []string{EnvToken, EnvDatabaseURL, "DATABASE_URL", "PGPASSWORD", "PGSERVICEFILE", "PGPASSFILE"}

// commandEnv chooses the environment of a job's command from the worker's
// environ: the base variables, the ones --pass-env names (exact names or
// globs such as AWS_*), or with --pass-env-all all of them; never a secret
// (secretEnv, or a variable holding the worker's own token or database URL)
// unless --pass-env names it exactly. The STINT_JOB_* identity of the
// attempt is added after by the runner, so no passed variable can fake it.
type commandEnv struct {
	pass    []string // names and globs of --pass-env
	passAll bool
	secrets []string // values never passed unless named: the worker's token, database URL
}

// checkPassEnv refuses a --pass-env pattern path.Match cannot read.
func checkPassEnv(patterns []string) error {
	for _, p := range patterns {
		if p == "" || strings.Contains(p, "=") {
			return usageErrorf("--pass-env %q: give a variable name or a glob such as AWS_*", p)
		}
		if _, err := path.Match(p, ""); err != nil {
			return usageErrorf("--pass-env %q: %v", p, err)
		}
	}
	return nil
}

// build returns the variables of environ (NAME=VALUE) the command gets.
func (c commandEnv) build(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if c.named(name) || (!c.secret(name, value) && (c.passAll || slices.Contains(baseEnv, name) || c.globbed(name))) {
			out = append(out, kv)
		}
	}
	return out
}

// named reports whether --pass-env gives name itself, not a glob matching it.
func (c commandEnv) named(name string) bool { return slices.Contains(c.pass, name) }

func (c commandEnv) globbed(name string) bool {
	for _, p := range c.pass {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

func (c commandEnv) secret(name, value string) bool {
	if slices.Contains(secretEnv, name) {
		return true
	}
	for _, s := range c.secrets {
		if s != "" && strings.Contains(value, s) {
			return true
		}
	}
	return false
}
