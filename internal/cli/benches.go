package cli

import (
	"context"
	"path/filepath"

	"github.com/impactbench/impactbench/internal/runner"
)

// forBenches runs a command over its benchmark arguments: `all` is every
// benchmark, several names each in turn, in the order given. one does the
// work for one benchmark directory, printing its own text, and returns its
// --json object (nil: none); several says whether it is one of several
// (or all), so that a command keeps its single output for one benchmark
// named: its own object, not an array. For several, --json is one array of
// the objects returned, in order (a benchmark that failed is in it only if
// one returned an object for it); a benchmark that fails does not stop the
// others, and the error names each failure by benchmark (exit code of the
// worst kind). An interrupt leaves the benchmarks not begun.
func (g *globals) forBenches(ctx context.Context, args []string, one func(dir string, several bool) (any, error)) error {
	cfg, err := g.loadConfig()
	if err != nil {
		return err
	}
	dirs, err := benchDirs(cfg, args)
	if err != nil {
		return err
	}
	if len(dirs) == 1 && !(len(args) == 1 && args[0] == "all") {
		v, err := one(dirs[0], false)
		if err != nil || !g.JSON || v == nil {
			return err
		}
		return writeJSON(g.stdout, v)
	}
	slugs := make([]string, len(dirs))
	errs := make([]error, len(dirs))
	objs := []any{}
	for i, dir := range dirs {
		if err := ctx.Err(); err != nil {
			return err
		}
		var v any
		slugs[i] = filepath.Base(dir)
		if v, errs[i] = one(dir, true); v != nil && g.JSON {
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
