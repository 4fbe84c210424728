package config

import (
	"fmt"
	"os"
	"testing"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

func TestScratch(t *testing.T) {
	src, _ := os.ReadFile(os.Getenv("SCRATCH"))
	f, err := parser.ParseBytes(src, parser.ParseComments)
	if err != nil {
		fmt.Println("ERR", err)
		return
	}
	for _, d := range f.Docs {
		fmt.Printf("doc body %T\n", d.Body)
		dump(d.Body, 0)
	}
}

func dump(n ast.Node, depth int) {
	ind := fmt.Sprintf("%*s", depth*2, "")
	if n == nil {
		fmt.Println(ind, "nil")
		return
	}
	tk := n.GetToken()
	pos := ""
	if tk != nil {
		pos = fmt.Sprintf("%d:%d off=%d", tk.Position.Line, tk.Position.Column, tk.Position.Offset)
	}
	switch v := n.(type) {
	case *ast.MappingNode:
		fmt.Println(ind, "map", pos, "flow", v.IsFlowStyle, "start", v.Start.Position.Line)
		for _, mv := range v.Values {
			ktk := mv.Key.GetToken()
			fmt.Printf("%s  key %q %T at %d:%d off=%d colon=%d:%d\n", ind, mv.Key.String(), mv.Key, ktk.Position.Line, ktk.Position.Column, ktk.Position.Offset, mv.Start.Position.Line, mv.Start.Position.Column)
			dump(mv.Value, depth+2)
		}
	case *ast.SequenceNode:
		fmt.Println(ind, "seq", pos, "flow", v.IsFlowStyle)
		for _, e := range v.Values {
			dump(e, depth+1)
		}
	case *ast.StringNode:
		fmt.Printf("%s str %s %q origin=%q\n", ind, pos, v.Value, tk.Origin)
	case *ast.LiteralNode:
		fmt.Printf("%s lit %s %q\n", ind, pos, v.Value.Value)
	default:
		fmt.Printf("%s %T %s %v\n", ind, n, pos, n)
	}
}
