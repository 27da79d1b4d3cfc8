// Package browsertest drives stint's dashboard in a real browser: Debian's
// chromium, through playwright-core from npm, against a real `stint dev`
// built from this module. See browser_test.go; it needs node, npm and
// /usr/bin/chromium, installs chromium with apt when it can, and under
// CI=true fails rather than skips when it cannot run.
package browsertest
