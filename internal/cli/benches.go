package cli

import (
	"context"
	"path/filepath"

	"github.com/impactbench/impactbench/internal/runner"
)

// forBenches runs a read-only command (items, report) over its benchmark
// arguments as aggregate does: `all` is every benchmark, several names each
// in turn. one does the work for one benchmark directory and returns its
// --json object (it prints its own text). One benchmark given by name
// keeps the command's single output: its object, not an array. Otherwise
// --json is one array of the objects of the benchmarks that succeeded, in
// order; a benchmark that fails does not stop the others, and the error
// names each failure by benchmark (exit code of the worst kind).
func (g *globals) forBenches(ctx context.Context, args []string, one func(dir string) (any, error)) error {
	cfg, err := g.loadConfig()
	if err != nil {
		return err
	}
	dirs, err := benchDirs(cfg, args)
	if err != nil {
		return err
	}
	if len(dirs) == 1 && !(len(args) == 1 && args[0] == "all") {
		v, err := one(dirs[0])
		if err != nil || !g.JSON {
			return err
		}
		return writeJSON(g.stdout, v)
	}
	slugs := make([]string, len(dirs))
	errs := make([]error, len(dirs))
	objs := []any{}
	for i, dir := range dirs {
		if err := ctx.Err(); err != nil {
			return err // interrupted: the benchmarks left are not begun
		}
		slugs[i] = filepath.Base(dir)
		v, err := one(dir)
		if errs[i] = err; err == nil && g.JSON {
			objs = append(objs, v)
		}
	}
	if g.JSON {
		if err := writeJSON(g.stdout, objs); err != nil {
			return err
		}
	}
	return runner.JoinOnce(slugs, errs)
}
