package lifecycle

import "strings"

// CheckRunGraph validates the jobs of a run before anything is written: names
// present and unique, every depends_on naming a job of the run (existing, in
// added, or among the new), and no cycle. existing are jobs already in the
// run (a dynamic plan adds to them); their edges are known to be acyclic.
func CheckRunGraph(existing, added []RunNode) error {
	names := make(map[string]RunNode, len(existing)+len(added))
	for _, n := range existing {
		names[n.Name] = n
	}
	if len(added) == 0 {
		return Validationf("a run needs at least one job")
	}
	for _, n := range added {
		if n.Name == "" {
			return Validationf("every job of a run needs a name: depends_on refers to jobs by name")
		}
		if err := CheckTexts("job name", n.Name); err != nil {
			return Validationf("%s", inputProblem(err))
		}
		if _, dup := names[n.Name]; dup {
			return Validationf("job name %q is used twice in the run: names must be unique", n.Name)
		}
		names[n.Name] = n
	}
	for _, n := range added {
		for _, d := range n.DependsOn {
			if _, ok := names[d]; !ok {
				return Validationf("job %q depends on %q, which is not a job of this run: name a job of the run", n.Name, d)
			}
		}
	}
	// Depth-first search from each new job; only new jobs can close a cycle.
	const (
		visiting = 1
		done     = 2
	)
	mark := map[string]int{}
	var path []string
	var visit func(name string) error
	visit = func(name string) error {
		switch mark[name] {
		case visiting:
			i := 0
			for path[i] != name {
				i++
			}
			return Validationf("the jobs of the run form a cycle: %s → %s; remove one of these depends_on", strings.Join(path[i:], " → "), name)
		case done:
			return nil
		}
		mark[name] = visiting
		path = append(path, name)
		for _, d := range names[name].DependsOn {
			if err := visit(d); err != nil {
				return err
			}
		}
		path = path[:len(path)-1]
		mark[name] = done
		return nil
	}
	for _, n := range added {
		if err := visit(n.Name); err != nil {
			return err
		}
	}
	return nil
}
