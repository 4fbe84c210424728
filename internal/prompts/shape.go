package prompts

import (
	"fmt"
	"text/template"
	"text/template/parse"
)

// Bounds on a template's shape, checked at Load: what it renders is
// bounded by maxSampleRender, but a loop that renders nothing is not, so
// the loops themselves are bounded. A prompt ranges over the lists of its
// data, at most maxRangeNesting deep, and its {{template}} calls expand to
// at most maxTemplateCalls templates, without recursion. Before, a 30-byte
// override ({{range 10000000000000}}{{end}}), or {{define}}s each calling
// the one before twice, ran at load for hours. The built-in templates
// range one level deep and call no templates.
const (
	maxRangeNesting  = 2
	maxTemplateCalls = 1000
)

// checkShape refuses a template set whose loops are not bounded by its
// data, naming the file, line and column of the first such loop or call.
func checkShape(t *template.Template) error {
	sc := &shapeChecker{trees: map[string]*parse.Tree{}, done: map[string]shapeInfo{}, visiting: map[string]bool{}}
	for _, tt := range t.Templates() {
		if tt.Tree != nil && tt.Tree.Root != nil {
			sc.trees[tt.Name()] = tt.Tree
		}
	}
	_, err := sc.visit(t.Name())
	return err
}

// shapeInfo is what a template expands to: the templates expanded (itself
// included) and its deepest range nesting.
type shapeInfo struct {
	calls, nest int
}

// shapeChecker walks a template set's trees from one template through the
// templates it calls, remembering each template's shape once known and the
// templates being visited (to catch recursion).
type shapeChecker struct {
	trees    map[string]*parse.Tree
	done     map[string]shapeInfo
	visiting map[string]bool
}

// visit is the shape of template name, or the first loop or call in it
// that breaks the bounds.
func (sc *shapeChecker) visit(name string) (shapeInfo, error) {
	if in, ok := sc.done[name]; ok {
		return in, nil
	}
	tree := sc.trees[name]
	if tree == nil {
		return shapeInfo{}, nil // an undefined template fails when executed
	}
	sc.visiting[name] = true
	defer delete(sc.visiting, name)
	w := &templateWalk{sc: sc, tree: tree, in: shapeInfo{calls: 1}}
	if err := w.walk(tree.Root, 0); err != nil {
		return shapeInfo{}, err
	}
	sc.done[name] = w.in
	return w.in, nil
}

// templateWalk is the walk through one template's tree, adding up its
// shape in.
type templateWalk struct {
	sc   *shapeChecker
	tree *parse.Tree
	in   shapeInfo
}

// walk adds node n, at range nesting depth, to the template's shape, or
// returns the first loop or call under it that breaks the bounds.
func (w *templateWalk) walk(n parse.Node, depth int) error {
	tree, in, sc, walk := w.tree, &w.in, w.sc, w.walk
	in.nest = max(in.nest, depth)
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if err := walk(c, depth); err != nil {
				return err
			}
		}
	case *parse.IfNode:
		return walkBranch(&n.BranchNode, depth, walk)
	case *parse.WithNode:
		return walkBranch(&n.BranchNode, depth, walk)
	case *parse.RangeNode:
		loc, _ := tree.ErrorContext(n)
		if !overData(n.Pipe) {
			return fmt.Errorf("%s: {{range %s}}: a prompt ranges only over a list of its data (.Field, $x.Field)", loc, n.Pipe)
		}
		if depth+1 > maxRangeNesting {
			return fmt.Errorf("%s: {{range}} nested more than %d deep", loc, maxRangeNesting)
		}
		if err := walk(n.List, depth+1); err != nil {
			return err
		}
		return walk(n.ElseList, depth)
	case *parse.TemplateNode:
		loc, _ := tree.ErrorContext(n)
		if sc.visiting[n.Name] {
			return fmt.Errorf("%s: {{template %q}} calls itself (through the templates it calls)", loc, n.Name)
		}
		sub, err := sc.visit(n.Name)
		if err != nil {
			return err
		}
		in.calls += sub.calls
		in.nest = max(in.nest, depth+sub.nest)
		switch {
		case in.calls > maxTemplateCalls:
			return fmt.Errorf("%s: {{template}} calls expand to more than %d templates", loc, maxTemplateCalls)
		case depth+sub.nest > maxRangeNesting:
			return fmt.Errorf("%s: {{template %q}} nests {{range}} more than %d deep", loc, n.Name, maxRangeNesting)
		}
	}
	return nil
}

func walkBranch(b *parse.BranchNode, depth int, walk func(parse.Node, int) error) error {
	if err := walk(b.List, depth); err != nil {
		return err
	}
	return walk(b.ElseList, depth)
}

// overData: the range's pipeline is one field of the data (.X, .X.Y, ., or
// $v.X), not a number, a bare variable or a function's result.
func overData(p *parse.PipeNode) bool {
	if p == nil || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
		return false
	}
	switch a := p.Cmds[0].Args[0].(type) {
	case *parse.FieldNode, *parse.DotNode:
		return true
	case *parse.VariableNode:
		return len(a.Ident) > 1
	}
	return false
}
