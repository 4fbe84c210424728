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
	trees := map[string]*parse.Tree{}
	for _, tt := range t.Templates() {
		if tt.Tree != nil && tt.Tree.Root != nil {
			trees[tt.Name()] = tt.Tree
		}
	}
	type info struct {
		calls, nest int // templates expanded (itself included), deepest range nesting
	}
	done := map[string]info{}
	visiting := map[string]bool{}
	var visit func(name string) (info, error)
	visit = func(name string) (info, error) {
		if in, ok := done[name]; ok {
			return in, nil
		}
		tree := trees[name]
		if tree == nil {
			return info{}, nil // an undefined template fails when executed
		}
		visiting[name] = true
		defer delete(visiting, name)
		in := info{calls: 1}
		var walk func(n parse.Node, depth int) error
		walk = func(n parse.Node, depth int) error {
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
				if visiting[n.Name] {
					return fmt.Errorf("%s: {{template %q}} calls itself (through the templates it calls)", loc, n.Name)
				}
				sub, err := visit(n.Name)
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
		if err := walk(tree.Root, 0); err != nil {
			return info{}, err
		}
		done[name] = in
		return in, nil
	}
	_, err := visit(t.Name())
	return err
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
